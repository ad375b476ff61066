import type { Census } from "@/lib/city/census";
import { look } from "@/lib/plat/nav";

/** A count of /city.json said in a sentence: its value as read, its key beside it for the reader who compares. */
function Value({ census, name }: { census: Census; name: "hotelGuests" | "lotsOccupied" | "fakeTide" }) {
  return (
    <span data-census={name}>
      <strong className="font-semibold tabular-nums" data-value>
        {census[name]}
      </strong>{" "}
      (<code className="text-xs">{name}</code>)
    </span>
  );
}

/**
 * The three counts of /city.json that the law fixes, said once in a line rather than as cards:
 * hotel guests are the beds occupied, no lot can be occupied, and the city counts no fake arrival.
 * The values are still the ones read, so the page and /city.json agree whatever happens.
 */
export function CensusConstants({ census }: { census: Census }) {
  return (
    <p className={`mt-3 max-w-prose text-sm ${look.muted}`} data-census-constants>
      By the city&apos;s law: hotel guests <Value census={census} name="hotelGuests" /> are the beds occupied; lots occupied{" "}
      <Value census={census} name="lotsOccupied" /> is 0 because land is never sold and a held lot is not occupied; fake arrivals{" "}
      <Value census={census} name="fakeTide" /> is always 0, the city counts none.
    </p>
  );
}
