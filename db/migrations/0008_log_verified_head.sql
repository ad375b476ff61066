CREATE TABLE "log_verified_head" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"seq" bigint NOT NULL,
	"hash" text NOT NULL,
	"audit_after" bigint DEFAULT 0 NOT NULL,
	"verified_at" timestamp with time zone NOT NULL,
	CONSTRAINT "log_verified_head_one_row" CHECK ("log_verified_head"."id" = 1)
);
