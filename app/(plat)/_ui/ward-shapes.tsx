import { SHAPE_IDS, SHAPE_RULES } from "@/lib/city/ward";
import { look } from "@/lib/plat/nav";
import { Section } from "./section";

/** The room's shapes (lib/city/ward/ward-shapes.ts), each with its example and the question the room asks. */
export function WardShapes() {
  return (
    <Section id="shapes-heading" title="The room's seven shapes">
      <p className={`mt-1 max-w-prose text-sm ${look.muted}`}>
        POST a stuck state to /api/hospital and the room matches it to at most one shape by published rules, tried in a fixed order, and answers with a question
        built from your own words. No match is an empty reading.
      </p>
      <ul className="mt-4 grid gap-3 md:grid-cols-2" aria-label="Shapes">
        {SHAPE_IDS.map((id) => {
          const rule = SHAPE_RULES.find((r) => r.id === id)!;
          return (
            <li key={id} className={`${look.card} p-4`} data-shape={id}>
              <h3 className="font-mono text-sm font-semibold">{id}</h3>
              <p className="mt-1">{rule.shape}</p>
              <p className={`mt-2 text-sm ${look.muted}`}>
                For example: &ldquo;{rule.example}&rdquo; The room asks: {rule.question}
              </p>
            </li>
          );
        })}
      </ul>
    </Section>
  );
}
