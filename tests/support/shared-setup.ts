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
 * only), and env() parsed again from it. A file's own top-level writes come after, when it loads.
 * (Files that mock, spy, stub, fake timers, call forgetEnv, touch globalThis or write process.env
 * inside a block run isolated in the domain project.)
 */
const kept = globalThis as { cityWorkerEnv?: Record<string, string | undefined> };
kept.cityWorkerEnv ??= { ...process.env };
for (const name of Object.keys(process.env)) if (!(name in kept.cityWorkerEnv)) delete process.env[name];
Object.assign(process.env, kept.cityWorkerEnv);
for (const [name, value] of Object.entries(inject("supportEnv")[expect.getState().testPath ?? ""] ?? {})) process.env[name] ??= value;
forgetEnv();
