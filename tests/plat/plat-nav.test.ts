import { describe, expect, it } from "vitest";
import { isCurrentPage } from "@/lib/plat/nav";

describe("the plat's header marks the current page", () => {
  it("marks a page on its own path and on the pages under it, and the census only on /", () => {
    expect(isCurrentPage("/peers", "/peers")).toBe(true);
    expect(isCurrentPage("/peers", `/peers/${"a".repeat(64)}`)).toBe(true);
    expect(isCurrentPage("/peers", "/peersxyz")).toBe(false);
    expect(isCurrentPage("/", "/")).toBe(true);
    expect(isCurrentPage("/", "/peers")).toBe(false);
    expect(isCurrentPage("/ward", "/no-such-place")).toBe(false);
  });
});
