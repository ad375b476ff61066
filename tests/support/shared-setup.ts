import { forgetEnv } from "@/lib/env";

/*
 * The domain-shared project runs its files without isolation (vitest.config.mts): one module graph
 * per worker thread, reused file after file. What a file could leave behind for the next one in
 * the same worker is put back here, before each file: process.env as the worker had it before its
 * first file ran, and env() parsed again from it. (Files that mock, spy, stub, fake timers or touch
 * process.env or globalThis themselves run isolated in the domain project.)
 */
const kept = globalThis as { cityWorkerEnv?: Record<string, string | undefined> };
kept.cityWorkerEnv ??= { ...process.env };
for (const name of Object.keys(process.env)) if (!(name in kept.cityWorkerEnv)) delete process.env[name];
Object.assign(process.env, kept.cityWorkerEnv);
forgetEnv();
