// The face of this capability, written by scripts/house-move.ts
// (lib/city/posts/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { addLantern, KEYWORD_CHARS, LANTERN_SCAN_POSTS, LANTERNS_PER_CITIZEN, listLanterns, putOutLantern } from "./lanterns";
export { listPosts, type Place, POST_BODY_CHARS, POST_DOORS, POSTS_PAGE, publishPost, ROOM_NAME } from "./posts";
