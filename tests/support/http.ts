import { inject } from "vitest";

export function baseUrl(): string {
  return inject("baseUrl");
}

export async function call(path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${baseUrl()}${path}`, init);
}

export async function getJson<T = Record<string, unknown>>(path: string, init: RequestInit = {}): Promise<{ response: Response; body: T }> {
  const response = await call(path, init);
  return { response, body: (await response.json()) as T };
}

export function postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return call(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
}
