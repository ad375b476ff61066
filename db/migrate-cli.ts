import { migrateDatabase, openConfiguredDatabase } from "./client";

const open = await openConfiguredDatabase();
try {
  await migrateDatabase(open);
  console.log(`migrations applied (${open.driver})`);
} finally {
  await open.close();
}
