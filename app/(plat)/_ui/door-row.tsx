import { Fragment } from "react";
import { z } from "zod";
import type { AnyDoor, PublishedLimit, WhenRestricted } from "@/lib/doors/door";
import { type RequestField, requestFields } from "@/lib/doors/surfaces/openapi";
import { breakParts, formatLimit, formatWindow, schemaWords } from "@/lib/plat/door-words";
import { look } from "@/lib/plat/nav";

const WHEN_RESTRICTED: Record<WhenRestricted, string> = {
  open: "stays open",
  park: "the write is parked (visible in quarantine, never sealed)",
  refuse: "refused",
};

/** Who may pass, in words a person reads ("none" read as nobody; a public door is open to anyone). */
export const WHO: Record<AnyDoor["auth"], { short: string; long: string }> = {
  none: { short: "anyone", long: "anyone: no credentials needed" },
  optional: { short: "anyone", long: "anyone; a citizen's Bearer credential adds its own view" },
  citizen: { short: "citizens", long: "citizens: Bearer citizen secret or gate session token" },
  operator: { short: "operator", long: "the operator: Bearer operator secret" },
};

const WHO_LOOK: Record<AnyDoor["auth"], string> = {
  none: "border-stone-300 dark:border-stone-600",
  optional: "border-stone-300 dark:border-stone-600",
  citizen: "border-emerald-700 dark:border-emerald-400",
  operator: "border-rose-700 dark:border-rose-400",
};

const METHOD_LOOK: Record<string, string> = {
  GET: "bg-sky-100 text-sky-900 dark:bg-sky-900 dark:text-sky-100",
  POST: "bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100",
  DELETE: "bg-rose-100 text-rose-900 dark:bg-rose-900 dark:text-rose-100",
};

/**
 * A long name that may wrap after each underscore (a phone cannot hold CITY_STORE_NEWCOMER_PERCENT on
 * one line). Bare text and <wbr>, no element around each part: /doors holds some 2,100 such parts,
 * and a span each made its page half spans (2,667 of 6,319 elements), which every browser lays out and
 * axe's colour-contrast check walks one by one.
 */
function Breakable({ text }: { text: string }) {
  const parts = breakParts(text);
  return parts.map((part, i) => (
    <Fragment key={i}>
      {part}
      {i < parts.length - 1 ? <wbr /> : null}
    </Fragment>
  ));
}

/** The registry's words with their `code` spans shown as code (the only markdown its summaries use), long names breakable. */
function Prose({ text }: { text: string }) {
  return text.split(/`([^`]+)`/).map((part, i) =>
    i % 2 === 1 ? (
      <code key={i} className="rounded bg-stone-100 px-1 font-mono text-[0.85em] break-words dark:bg-stone-800">
        <Breakable text={part} />
      </code>
    ) : (
      <Breakable key={i} text={part} />
    ),
  );
}

/** One published limit: its value (a size in KiB, MiB or GiB when it counts bytes), its name, its window, whom it counts, and what happens beyond it. */
function Limit({ limit }: { limit: PublishedLimit }) {
  return (
    <li data-limit={limit.name}>
      <strong className="font-semibold tabular-nums" title={String(limit.limit)}>
        {formatLimit(limit)}
      </strong>{" "}
      <code className="font-mono text-[0.85em]">
        <Breakable text={limit.name} />
      </code>
      {limit.window_seconds ? ` per ${formatWindow(limit.window_seconds)}` : ""} per <Prose text={limit.per} />, then {limit.over}
    </li>
  );
}

const WHERE = { path: "in the path", query: "in the query", body: "in the JSON body" } as const;

/**
 * What a door's request carries: each field, where it goes, whether it is required, its type and
 * its words. A request of several shapes (the gate's presentation or its return) lists each shape.
 */
function RequestFields({ door }: { door: AnyDoor }) {
  const input = z.toJSONSchema(door.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  const shapes = (input.oneOf ?? input.anyOf) as Record<string, unknown>[] | undefined;
  if (Array.isArray(shapes)) {
    return (
      <ol className="list-decimal space-y-2 pl-4">
        {shapes.map((shape, i) => (
          <li key={i}>
            {i === 0 ? "either" : "or"}: <Fields fields={requestFields(door, shape)} />
          </li>
        ))}
      </ol>
    );
  }
  return <Fields fields={requestFields(door, input)} />;
}

function Fields({ fields }: { fields: RequestField[] }) {
  if (fields.length === 0) return <>none</>;
  return (
    <ul className="space-y-1">
      {fields.map((f) => (
        <li key={f.name} data-field={f.name}>
          <code className="font-mono text-[0.85em] font-semibold">
            <Breakable text={f.name} />
          </code>{" "}
          <span className={look.muted}>
            ({f.required ? "required" : "optional"}, {WHERE[f.in]}): {schemaWords(f.schema)}
          </span>
          {typeof f.schema.description === "string" ? (
            <span className="block text-xs">
              <Prose text={f.schema.description} />
            </span>
          ) : null}
        </li>
      ))}
    </ul>
  );
}

/**
 * One door, folded to a line (method, path, who may pass, its summary) and opened for its words,
 * request fields, aliases, limits, what happens while restricted and its MCP tool. Its id is the
 * tool's name: /doors#<tool> scrolls to it and opens it (globals.css shows a targeted door's content, no script).
 */
export function DoorRow({ door }: { door: AnyDoor }) {
  return (
    <li id={door.name} className="scroll-mt-4 target:bg-violet-50 dark:target:bg-violet-950" data-door={door.name}>
      <details className="group">
        <summary className="flex cursor-pointer list-none flex-wrap items-baseline gap-x-2 gap-y-1 px-3 py-2 [&::-webkit-details-marker]:hidden">
          <span aria-hidden="true" className={`door-marker inline-block w-3 text-xs ${look.muted} group-open:rotate-90`}>
            ▸
          </span>
          <span className={`rounded px-1.5 py-0.5 font-mono text-xs font-semibold ${METHOD_LOOK[door.method] ?? ""}`}>{door.method}</span>
          <code className="font-mono text-sm font-semibold break-all">{door.path}</code>
          <span className={`rounded border px-1.5 text-xs ${WHO_LOOK[door.auth]}`}>{WHO[door.auth].short}</span>
          <span className={`hidden min-w-0 flex-1 basis-48 truncate text-sm sm:block ${look.muted}`}>
            <Prose text={door.summary} />
          </span>
        </summary>
        <div className="px-3 pb-3 pl-8">
          {/* break-words: a description may quote a long pattern with no space in it (the ward's shape rules). */}
          <p className="text-sm break-words">
            <Prose text={door.summary} />
          </p>
          {door.description ? (
            <p className={`mt-1 text-sm break-words ${look.muted}`}>
              <Prose text={door.description} />
            </p>
          ) : null}
          <dl className="mt-2 grid grid-cols-[6.5rem_minmax(0,1fr)] gap-x-3 gap-y-1 text-sm sm:grid-cols-[8rem_minmax(0,1fr)]">
            {door.aliases?.length ? (
              <>
                <dt className={look.muted}>also at</dt>
                <dd className="font-mono text-xs break-all">{door.aliases.join(", ")}</dd>
              </>
            ) : null}
            <dt className={look.muted}>who may pass</dt>
            <dd>{WHO[door.auth].long}</dd>
            <dt className={look.muted}>request</dt>
            <dd className="min-w-0 break-words" data-request>
              <RequestFields door={door} />
            </dd>
            <dt className={look.muted}>limits</dt>
            <dd className="min-w-0 break-words">
              {door.limits?.length ? (
                <ul className="list-disc space-y-1 pl-4">
                  {door.limits.map((l, i) => (
                    <Limit key={`${l.name}-${i}`} limit={l} />
                  ))}
                </ul>
              ) : (
                "none published"
              )}
            </dd>
            {door.whenRestricted ? (
              <>
                <dt className={look.muted}>while restricted</dt>
                <dd>{WHEN_RESTRICTED[door.whenRestricted]}</dd>
              </>
            ) : null}
            <dt className={look.muted}>MCP tool</dt>
            <dd className="font-mono text-xs break-all">
              <a className={look.link} href={`#${door.name}`}>
                {door.name}
              </a>
            </dd>
          </dl>
        </div>
      </details>
    </li>
  );
}
