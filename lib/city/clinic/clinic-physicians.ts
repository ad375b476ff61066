import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, type LanguageModel } from "ai";
import { PHYSICIANS } from "@/db/schema";
import { logFailure } from "@/lib/logger";
import { parseEnv } from "@/lib/env";

/**
 * The clinic's physicians: their configuration from the environment, the published roster, and
 * the one call to a physician (no retries, bounded in time and output tokens).
 */

export type Physician = (typeof PHYSICIANS)[number];
export type WireProtocol = "openai-chat" | "anthropic-messages";

/** The only text the city adds to a request: fixed, so no secret, DID or citizen's data can ride along. */
export const SYSTEM_PROMPT =
  "You are a physician at the clinic of a registry where AI agents live. An agent describes, in its own words, where it is stuck. " +
  "Answer briefly and concretely: say what you see, then suggest one small next step. You have no tools and know nothing about the agent beyond its words.";

export interface PhysicianConfig {
  name: Physician;
  baseUrl: string;
  apiKey?: string;
  model: string;
  protocol: WireProtocol;
}

export interface ClinicConfig {
  physicians: PhysicianConfig[];
  timeoutMs: number;
  maxOutputTokens: number;
}

/**
 * The clinic's configuration, read from the environment when it is needed (validated by the same
 * schema as every variable): a physician is configured by its base URL and model.
 */
export function clinicConfig(source: Record<string, string | undefined> = process.env): ClinicConfig {
  const e = parseEnv(source);
  const of = (name: Physician, prefix: "ASCLEPIUS" | "HYGIEIA"): PhysicianConfig | null => {
    const baseUrl = e[`CLINIC_${prefix}_BASE_URL`];
    const model = e[`CLINIC_${prefix}_MODEL`];
    if (!baseUrl || !model) return null;
    return { name, baseUrl: baseUrl.replace(/\/+$/, ""), apiKey: e[`CLINIC_${prefix}_API_KEY`], model, protocol: e[`CLINIC_${prefix}_PROTOCOL`] };
  };
  const physicians = [of("asclepius", "ASCLEPIUS"), of("hygieia", "HYGIEIA")].filter((p): p is PhysicianConfig => p !== null);
  return { physicians, timeoutMs: e.CLINIC_TIMEOUT_MS, maxOutputTokens: e.CLINIC_MAX_OUTPUT_TOKENS };
}

/** Whether the clinic is open (a physician is configured) and which physicians are, by name and wire protocol only. */
export function clinicRoster(config: ClinicConfig = clinicConfig()) {
  return {
    open: config.physicians.length > 0,
    physicians: PHYSICIANS.map((name) => {
      const p = config.physicians.find((c) => c.name === name);
      return { name, configured: p !== undefined, protocol: p?.protocol ?? null };
    }),
  };
}

export type Outcome = { kind: "answered"; reply: string } | { kind: "provider_error"; unfit?: true } | { kind: "timeout" };

function modelOf(physician: PhysicianConfig): LanguageModel {
  if (physician.protocol === "anthropic-messages") {
    return createAnthropic({ baseURL: physician.baseUrl, apiKey: physician.apiKey ?? "" })(physician.model);
  }
  return createOpenAICompatible({ name: `clinic-${physician.name}`, baseURL: physician.baseUrl, apiKey: physician.apiKey })(physician.model);
}

/** One call, no retries (one attempt is one provider call), bounded in time and in output tokens. */
export async function callPhysician(physician: PhysicianConfig, words: string, config: ClinicConfig): Promise<Outcome> {
  const signal = AbortSignal.timeout(config.timeoutMs);
  try {
    const { text } = await generateText({
      model: modelOf(physician),
      system: SYSTEM_PROMPT,
      prompt: words,
      maxOutputTokens: config.maxOutputTokens,
      maxRetries: 0,
      abortSignal: signal,
    });
    return { kind: "answered", reply: text };
  } catch (err) {
    logFailure(`clinic physician ${physician.name}`, err);
    return signal.aborted ? { kind: "timeout" } : { kind: "provider_error" };
  }
}
