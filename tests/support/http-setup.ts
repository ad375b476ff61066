import { Agent, setGlobalDispatcher } from "undici";

// Every request of the HTTP suites opens its own connection (undici: pipelining 0 disables
// keep-alive). A pooled socket is a race on a loaded machine: whenever the event loop stands still
// for seconds (the harness once read the database with a synchronous psql per statement; createdb
// and dropdb still run synchronously in hooks), the server closes the idle socket meanwhile (its
// keep-alive is 5 s), and the next request, sent before the loop has seen the close, fails with
// "other side closed" (seen in clean-clone runs, in the MCP and the clinic suites, even with a
// 500 ms client keep-alive, whose timer cannot fire while the loop is blocked).
setGlobalDispatcher(new Agent({ pipelining: 0 }));
