CREATE TABLE "log_nodes" (
	"level" smallint NOT NULL,
	"idx" bigint NOT NULL,
	"hash" text NOT NULL,
	CONSTRAINT "log_nodes_level_idx_pk" PRIMARY KEY("level","idx")
);
--> statement-breakpoint
CREATE TABLE "log_checkpoints" (
	"size" bigint PRIMARY KEY NOT NULL,
	"root" text NOT NULL,
	"edge" text NOT NULL,
	"note" text NOT NULL,
	"signed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "log_cosignatures" (
	"witness" text NOT NULL,
	"size" bigint NOT NULL,
	"line" text NOT NULL,
	"cosigned_at" timestamp with time zone NOT NULL,
	CONSTRAINT "log_cosignatures_witness_size_pk" PRIMARY KEY("witness","size")
);
--> statement-breakpoint
SELECT city_make_append_only('log_nodes');
--> statement-breakpoint
SELECT city_make_append_only('log_checkpoints');
--> statement-breakpoint
SELECT city_make_append_only('log_cosignatures');
