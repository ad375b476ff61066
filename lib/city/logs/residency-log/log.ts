import { LOG_EVENTS, type LogEvent, residencyLogTables } from "@/db/schema";
import { env } from "@/lib/env";
import { bindLog, type LogDescriptor, originAtBaseHost } from "@/lib/city/logs/transparency-log";

/** The residency log (docs/log.md): origin CITY_LOG_ORIGIN, else `<host of CITY_BASE_URL>/residency-log`. */
export const RESIDENCY_LOG: LogDescriptor<LogEvent> = {
  name: "residency log",
  tables: residencyLogTables,
  events: LOG_EVENTS,
  origin: () => env().CITY_LOG_ORIGIN ?? originAtBaseHost("residency-log"),
  originVariable: "CITY_LOG_ORIGIN",
  receiptField: "log_receipt",
  sqlPrefix: "",
};

export const residencyLog = bindLog(RESIDENCY_LOG);
