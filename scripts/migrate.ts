import { openConfiguredDatabase } from "@/db/client";
import { upgradeDatabase } from "@/lib/city/upgrade";

// tsx runs this file as CommonJS (package.json has no "type": "module"), where a top-level await
// is an error: the work lives in an async main.
async function main(): Promise<void> {
  const open = await openConfiguredDatabase();
  try {
    const { nameKeys, importedKeyFacts } = await upgradeDatabase(open);
    console.log(`migrations applied (${open.driver})`);
    if (importedKeyFacts > 0) console.log(`identity log: ${importedKeyFacts} earlier key facts imported (imported: true)`);
    const { recomputed, unchanged, collisions } = nameKeys;
    if (recomputed + unchanged + collisions.length > 0) {
      console.log(
        `name keys: ${recomputed} recomputed, ${unchanged} already current, ${collisions.length} collisions kept apart${collisions.map((c) => `\n  ${c.did} shares its form with ${c.heldBy}`).join("")}`,
      );
    }
  } finally {
    await open.close();
  }
}

main().catch((err: unknown) => {
  console.error(`migration failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
