CREATE TABLE "live_schedules" (
	"did" text PRIMARY KEY NOT NULL,
	"wake_on" jsonb,
	"return_after" timestamp with time zone,
	"polled_at" timestamp with time zone NOT NULL
);
