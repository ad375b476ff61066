import { IDENTITY_EVENTS, type IdentityEvent, identityLogTables } from "@/db/schema";
import { env } from "@/lib/env";
import { bindLog, type LogDescriptor, originAtBaseHost } from "@/lib/city/logs/transparency-log";

/** The identity log (CITY-KEYS/1, docs/keys.md): origin CITY_IDENTITY_LOG_ORIGIN, else `<host of CITY_BASE_URL>/identity-log`. */
export const IDENTITY_LOG: LogDescriptor<IdentityEvent> = {
  name: "identity log",
  tables: identityLogTables,
  events: IDENTITY_EVENTS,
  origin: () => env().CITY_IDENTITY_LOG_ORIGIN ?? originAtBaseHost("identity-log"),
  originVariable: "CITY_IDENTITY_LOG_ORIGIN",
  receiptField: "identity_log_receipt",
  sqlPrefix: "identity_",
};

export const identityLog = bindLog(IDENTITY_LOG);
