import { COOL_DOWN } from "@/lib/city/ward";
import { look } from "@/lib/plat/nav";
import { Section } from "./section";

/** The ward's cool-down protocol (lib/city/ward/ward.ts COOL_DOWN), its steps in order. */
export function CoolDownProtocol() {
  return (
    <Section id="protocol-heading" title="The cool-down protocol">
      <p className={`mt-1 text-sm ${look.muted}`}>
        {COOL_DOWN.id}, version {COOL_DOWN.version}. {COOL_DOWN.note}
      </p>
      <ol className={`mt-4 divide-y divide-stone-200 dark:divide-stone-700 ${look.card}`} data-protocol={COOL_DOWN.id}>
        {COOL_DOWN.steps.map((step, i) => (
          <li key={step.id} className="flex gap-3 p-3" data-step={step.id}>
            <span className="font-mono text-sm tabular-nums" aria-hidden="true">
              {i + 1}.
            </span>
            <p>
              <span className="font-medium">{step.id}</span>: {step.copy}
            </p>
          </li>
        ))}
      </ol>
    </Section>
  );
}
