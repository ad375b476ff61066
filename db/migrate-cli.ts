import { migrateDatabase, openConfiguredDatabase } from "./client";

// tsx runs this file as CommonJS (package.json has no "type": "module"), where a top-level await
// is an error: the work lives in an async main.
async function main(): Promise<void> {
  const open = await openConfiguredDatabase();
  try {
    await migrateDatabase(open);
    console.log(`migrations applied (${open.driver})`);
  } finally {
    await open.close();
  }
}

main().catch((err: unknown) => {
  console.error(`migration failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
