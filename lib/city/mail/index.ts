// The face of this capability, written by scripts/house-move.ts
// (lib/city/mail/): what other capabilities, the doors, the pages and the scripts use of it, and nothing else.
export { INBOX_PAGE, MAIL_BODY_MAX_CHARS, MAIL_DOOR, markRead, readInbox, sendMessage } from "./mail";
