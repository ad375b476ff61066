import { describe, expect, it } from "vitest";
import { contentTag, matchesIfNoneMatch, notModifiedSince, spliceNowUtc, splitNowUtc } from "@/lib/doors/pipeline/etag";

describe("entity tags", () => {
  it("tags the content without now_utc, so answers differing only in the clock share a tag", () => {
    const a = '{"now_utc":"2026-01-01T00:00:00.000Z","peers":[1]}';
    const b = '{"now_utc":"2026-01-01T00:00:09.999Z","peers":[1]}';
    const c = '{"now_utc":"2026-01-01T00:00:09.999Z","peers":[2]}';
    expect(contentTag(a)).toBe(contentTag(b));
    expect(contentTag(a)).not.toBe(contentTag(c));
    expect(contentTag("# CITY text")).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
  });

  it("splices a live now_utc into a cached answer", () => {
    const rest = splitNowUtc('{"now_utc":"2026-01-01T00:00:00.000Z","x":1}')!.rest;
    expect(spliceNowUtc(rest, new Date("2026-02-02T01:02:03.004Z"))).toBe('{"now_utc":"2026-02-02T01:02:03.004Z","x":1}');
    expect(splitNowUtc('{"x":1,"now_utc":"z"}')).toBeNull();
  });

  it("matches If-None-Match by weak comparison, in a list, and for *", () => {
    expect(matchesIfNoneMatch('"abc"', '"abc"')).toBe(true);
    expect(matchesIfNoneMatch('W/"abc"', '"abc"')).toBe(true);
    expect(matchesIfNoneMatch('"x", "abc"', '"abc"')).toBe(true);
    expect(matchesIfNoneMatch("*", '"abc"')).toBe(true);
    expect(matchesIfNoneMatch('"abd"', '"abc"')).toBe(false);
    expect(matchesIfNoneMatch(null, '"abc"')).toBe(false);
  });

  it("reads If-Modified-Since only without If-None-Match and only as a date: unchanged when modified no later than it", () => {
    const at = "Sun, 29 Nov 2026 04:00:00 GMT";
    const ask = (headers: Record<string, string>) => notModifiedSince(new Request("http://city.test/", { headers }), at);
    expect(ask({ "if-modified-since": at })).toBe(true);
    expect(ask({ "if-modified-since": "Sun, 29 Nov 2026 04:00:01 GMT" })).toBe(true);
    expect(ask({ "if-modified-since": "Sun, 29 Nov 2026 03:59:59 GMT" })).toBe(false);
    expect(ask({ "if-modified-since": "not a date" })).toBe(false);
    expect(ask({})).toBe(false);
    expect(ask({ "if-modified-since": at, "if-none-match": '"x"' })).toBe(false);
  });
});
