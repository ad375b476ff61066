// The face of this capability, written by scripts/house-move.ts
// (lib/city/a2a/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export {
  A2A_TASK_LEAST_BYTES,
  A2A_TASK_MAX_BYTES,
  A2A_TASK_RETENTION_SECONDS,
  A2A_TASKS_PER_OWNER,
  keepTask,
  listKeptTasks,
  readTask,
  type TaskCursor,
  taskOwnerHash,
} from "./a2a-tasks";
