import { expect, inject } from "vitest";
import { forgetEnv } from "@/lib/env";

declare module "vitest" {
  export interface ProvidedContext {
    /** Per test file (its full path): the defaults its support modules give process.env (vitest.config.mts). */
    supportEnv: Record<string, Record<string, string>>;
  }
}

/*
 * The domain-shared project runs its files without isolation (vitest.config.mts): one module graph
 * per worker thread, reused file after file. What a file could leave behind for the next one in
 * the same worker is put back here, before each file: process.env as the worker had it before its
 * first file ran, plus the defaults the support modules this file imports give it when they load
 * (`process.env.NAME ??= "value"`: loaded once per worker, they would give them to the first file
 * only), and env() parsed again from it. A file's own writes come after (at its top level when it
 * loads, in its hooks and tests when they run) and hold until the next file's turn. (Files that mock
 * or stub, reset modules, touch globalThis, or leave a spy or fake timers behind a test run isolated
 * in the domain project: vitest.config.mts.)
 */
const kept = globalThis as { cityWorkerEnv?: Record<string, string | undefined> };
kept.cityWorkerEnv ??= { ...process.env };
for (const name of Object.keys(process.env)) if (!(name in kept.cityWorkerEnv)) delete process.env[name];
Object.assign(process.env, kept.cityWorkerEnv);
for (const [name, value] of Object.entries(inject("supportEnv")[expect.getState().testPath ?? ""] ?? {})) process.env[name] ??= value;
forgetEnv();
