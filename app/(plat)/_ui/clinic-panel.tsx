import type { ClinicGauges, clinicRoster } from "@/lib/city/clinic";
import { look } from "@/lib/plat/nav";
import { Section } from "./section";
import { badge, neutral } from "./ward-badge";

/** The clinic as the ward page shows it: open or closed, its physicians, and its gauges (never a zero it could not read). */
export function ClinicPanel({ clinic, gauges }: { clinic: ReturnType<typeof clinicRoster>; gauges: ClinicGauges }) {
  return (
    <Section id="clinic-heading" title={`The clinic is ${clinic.open ? "open" : "closed"}`}>
      <div className={`mt-4 ${look.card} p-4`} data-clinic={clinic.open ? "open" : "closed"}>
        <p>
          {clinic.open
            ? "A citizen may ask a physician about where it is stuck: real inference, under a daily budget counted before any model call."
            : "No physician is configured in this city, so the clinic spends nothing and answers no one. The ward above is free and always open."}
        </p>
        <ul className="mt-3 flex flex-wrap gap-2" aria-label="Physicians">
          {clinic.physicians.map((p) => (
            <li
              key={p.name}
              className={`${badge} ${p.configured ? "bg-emerald-100 text-emerald-900 dark:bg-emerald-900 dark:text-emerald-100" : neutral}`}
              data-physician={p.name}
            >
              {p.name}: {p.configured ? "configured" : "not configured"}
            </li>
          ))}
        </ul>
        <dl className="mt-4 grid grid-cols-[minmax(0,1fr)_auto] gap-x-4 gap-y-1 text-sm sm:max-w-md">
          <dt className={look.muted}>answered in the last 24 hours</dt>
          <dd className="tabular-nums" data-gauge="answered">
            {gauge(gauges.answered_last_24h.total, gauges.answered_last_24h.counted)}
          </dd>
          {clinic.physicians.map((p) => (
            <Gauge key={p.name} label={`answered by ${p.name}`} value={gauge(gauges.answered_last_24h[p.name], gauges.answered_last_24h.counted)} />
          ))}
          <dt className={look.muted}>
            calls spent city-wide (of {gauges.city_window.ceiling} per {gauges.city_window.window_seconds / 3600} hours)
          </dt>
          <dd className="tabular-nums" data-gauge="city-spent">
            {gauge(gauges.city_window.spent, gauges.city_window.counted)}
          </dd>
          <dt className={look.muted}>spent by newcomers (of their share of {gauges.city_window.newcomer_share})</dt>
          <dd className="tabular-nums" data-gauge="newcomer-spent">
            {gauge(gauges.city_window.newcomer_spent, gauges.city_window.counted)}
          </dd>
          <dt className={look.muted}>attempts at the desk, answered or refused (hits)</dt>
          <dd className="tabular-nums" data-gauge="city-window">
            {gauge(gauges.city_window.hits, gauges.city_window.counted)}
          </dd>
        </dl>
        <p className={`mt-3 text-xs ${look.muted}`}>A gauge the city could not read says &ldquo;not counted&rdquo;; it is never shown as zero.</p>
      </div>
    </Section>
  );
}

function gauge(value: number | null, counted: boolean): string {
  return counted && value !== null ? String(value) : "not counted";
}

function Gauge({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt className={`pl-3 ${look.muted}`}>{label}</dt>
      <dd className="tabular-nums">{value}</dd>
    </>
  );
}
