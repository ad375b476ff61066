import { describe, expect, it } from "vitest";
import { contentTag, matchesIfNoneMatch, spliceNowUtc, splitNowUtc } from "@/lib/doors/etag";

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
});
