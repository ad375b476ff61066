// The face of this capability, written by scripts/house-move.ts
// (lib/city/clinic/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { CLINIC_DOOR, consult, type Consultation } from "./clinic";
export { CLINIC_RESERVE_RULE } from "./clinic-desk";
export { clinicGauges, type ClinicGauges, clinicReadings } from "./clinic-gauges";
export { clinicRoster } from "./clinic-physicians";
