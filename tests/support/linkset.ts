/**
 * RFC 9264 section 4.2's JSON linkset, checked by hand from the RFC (not from the code that builds
 * one): the document is an object whose one member `linkset` is an array of link context objects;
 * each has an `anchor` (here required, an absolute URI) and, per relation type, an array of target
 * objects, each with an `href` (a URI) and optional string attributes (`type`, `title`) or
 * `hreflang` (an array of strings). Registered relation types are lowercase tokens; extension ones
 * are URIs. Returns the problems found, none for a valid linkset.
 */
export function linksetProblems(doc: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(doc)) return ["the document is not a JSON object"];
  const members = Object.keys(doc);
  if (members.length !== 1 || members[0] !== "linkset") problems.push(`the document's members are ${JSON.stringify(members)}, not ["linkset"]`);
  if (!Array.isArray(doc.linkset) || doc.linkset.length === 0) return [...problems, "linkset is not a non-empty array"];
  doc.linkset.forEach((context, i) => {
    if (!isObject(context)) return void problems.push(`linkset[${i}] is not an object`);
    if (typeof context.anchor !== "string" || !isAbsoluteUri(context.anchor)) problems.push(`linkset[${i}].anchor is not an absolute URI`);
    const relations = Object.keys(context).filter((key) => key !== "anchor");
    if (relations.length === 0) problems.push(`linkset[${i}] has no relation`);
    for (const rel of relations) {
      if (!/^[a-z][a-z0-9.-]*$/.test(rel) && !isAbsoluteUri(rel)) problems.push(`linkset[${i}]: "${rel}" is not a relation type`);
      const targets = context[rel];
      if (!Array.isArray(targets) || targets.length === 0) {
        problems.push(`linkset[${i}].${rel} is not a non-empty array of targets`);
        continue;
      }
      targets.forEach((target, j) => {
        const at = `linkset[${i}].${rel}[${j}]`;
        if (!isObject(target)) return void problems.push(`${at} is not an object`);
        if (typeof target.href !== "string" || !isAbsoluteUri(target.href)) problems.push(`${at}.href is not an absolute URI`);
        for (const [name, value] of Object.entries(target)) {
          if (name === "hreflang" ? !(Array.isArray(value) && value.every((v) => typeof v === "string")) : typeof value !== "string") {
            problems.push(`${at}.${name} is not of the RFC's shape`);
          }
        }
      });
    }
  });
  return problems;
}

/** Every target of a linkset: relation and target object. */
export function linksetTargets(doc: { linkset: Record<string, unknown>[] }): { anchor: string; rel: string; href: string; type?: string }[] {
  return doc.linkset.flatMap((context) =>
    Object.entries(context)
      .filter(([rel]) => rel !== "anchor")
      .flatMap(([rel, targets]) =>
        (targets as { href: string; type?: string }[]).map((t) => ({ anchor: String(context.anchor), rel, href: t.href, type: t.type })),
      ),
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isAbsoluteUri(value: string): boolean {
  try {
    return /^[a-z][a-z0-9+.-]*:/i.test(value) && new URL(value).href.length > 0;
  } catch {
    return false;
  }
}
