import { Agent, type Dispatcher, setGlobalDispatcher } from "undici";

// Every request of the HTTP suites opens its own connection (undici: pipelining 0 disables
// keep-alive). A pooled socket is a race on a loaded machine: whenever the event loop stands still
// for seconds (the harness once read the database with a synchronous psql per statement; createdb
// and dropdb still run synchronously in hooks), the server closes the idle socket meanwhile (its
// keep-alive is 5 s), and the next request, sent before the loop has seen the close, fails with
// "other side closed" (seen in clean-clone runs, in the MCP and the clinic suites, even with a
// 500 ms client keep-alive, whose timer cannot fire while the loop is blocked).
//
// And every answer comes uncompressed unless a test asks otherwise: fetch asks for gzip by itself,
// so each answer over 1 KB (the OpenAPI document is 421 KB) was compressed by the server and
// inflated again here, work no test looks at. Measured on six files that fetch the big documents,
// three runs alternated: 49.7, 60.1 and 65.5 CPU-s against 54.9, 62.0 and 70.3 (servers and runner).
setGlobalDispatcher(new Agent({ pipelining: 0 }).compose(uncompressedUnlessAsked));

/** fetch's own Accept-Encoding (undici adds it when the request has none): a test that names one keeps it. */
const FETCH_DEFAULT_ENCODINGS = new Set(["gzip, deflate", "br, gzip, deflate"]);

function uncompressedUnlessAsked(dispatch: Dispatcher["dispatch"]): Dispatcher["dispatch"] {
  return (options, handler) => {
    const headers = options.headers;
    // fetch hands its headers over as one object of lowercase names (undici's HeadersList.entries).
    if (headers && !Array.isArray(headers) && typeof headers === "object" && !(Symbol.iterator in headers)) {
      const asked = (headers as Record<string, string | string[] | undefined>)["accept-encoding"];
      if (typeof asked === "string" && FETCH_DEFAULT_ENCODINGS.has(asked)) {
        return dispatch({ ...options, headers: { ...headers, "accept-encoding": "identity" } }, handler);
      }
    }
    return dispatch(options, handler);
  };
}
