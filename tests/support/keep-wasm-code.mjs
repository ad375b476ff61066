// Turns off V8's garbage collection of WebAssembly code in this process, for every thread of it.
// Imported by vitest.config.mts, so every vitest run's main process and worker threads have it.
//
// Why: Node 24's V8 (13.6) sometimes aborts the whole process with `Check failed:
// jit_page_->allocations_.erase(addr) == 1` in ThreadIsolation::UnregisterWasmAllocation: exit 133,
// with every test passed, in the domain suites, whose worker threads each make and close hundreds
// of PGlite instances (how often: docs/testing.md). That function is reached only when V8 frees
// WebAssembly code it found dead, and only its code collector finds code dead. With the collector
// off, code that tiering replaced stays until its module is freed whole (by a different path), at
// no CPU or memory cost measured (the figures are in docs/testing.md too).
//
// The city's own processes (`next start`, `npm run dev`: one PGlite for their life) keep V8's
// default. A plain JavaScript module, so that a test can load it in a bare Node
// (tests/db/keep-wasm-code.test.ts). Set at run time rather than on the command line, so that
// `npx vitest` and every script that runs vitest get it alike: V8 reads this flag each time code
// becomes unused, not only when it starts.
import { setFlagsFromString } from "node:v8";

setFlagsFromString("--no-wasm-code-gc");
