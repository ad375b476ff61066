/**
 * The city's architecture, as rules a tool checks on every CI run (`npm run check:architecture`;
 * docs/architecture.md is checked against this file). The arrows point down:
 *
 *   app/  ->  lib/doors/  ->  lib/city/  ->  db/
 *                                 |
 *                                 v
 *                            lib/tlog/   (the transparency log's pure core)
 *
 * and every room may use the ground: lib/env.ts, lib/errors.ts, lib/logger.ts. Inside lib/city/, a
 * folder is a capability (the logs are three, under logs/) and its index.ts is its face: the one
 * file any other capability, door, page or script imports (docs/architecture.md, "The capabilities").
 * lib/doors/ is three roles: pipeline/ (the way every request takes), declarations/ (a folder per
 * capability, mirroring lib/city/) and surfaces/ (what is generated from the registry).
 * Each rule says in one line why it holds.
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A circle means no file in it can be read, tested or moved without the others.",
      from: {},
      to: { circular: true },
    },
    {
      name: "db-knows-no-domain",
      severity: "error",
      comment: "db/ is tables, migrations and drivers: data steps belong to the domain (lib/city/upgrade.ts), so db/ uses only the ground.",
      from: { path: "^db/" },
      to: { path: "^(lib|app)/", pathNot: "^lib/(env|errors)\\.ts$" },
    },
    {
      name: "tlog-is-pure",
      severity: "error",
      comment: "lib/tlog/ is tree math, notes, tiles, the verifying client and the witness: no SQL, no city, so a second log reuses it.",
      from: { path: "^lib/tlog/" },
      to: { path: "^(db|lib/city|lib/doors|lib/plat|lib/scan|app)/" },
    },
    {
      name: "domain-below-doors",
      severity: "error",
      comment: "lib/city/ takes a database handle and plain values: it never knows which door, protocol or page called it.",
      from: { path: "^lib/city/" },
      to: { path: "^(lib/doors|lib/plat|app)/" },
    },
    {
      name: "lib-below-app",
      severity: "error",
      comment: "app/ holds route files and pages built from lib/: nothing in lib/ or db/ depends on a route or a page.",
      from: { path: "^(lib|db)/" },
      to: { path: "^app/" },
    },
    {
      name: "routes-are-doors",
      severity: "error",
      comment: "A route file hands its request to the door declared once in lib/doors/: no SQL and no domain call of its own.",
      from: { path: "^app/(api|mcp|\\.well-known)/" },
      to: { path: "^(db|lib/city)/" },
    },
    {
      name: "scanner-is-pure",
      severity: "error",
      comment: "lib/scan/ judges text alone: no database, no city, so it is mutation-tested without either.",
      from: { path: "^lib/scan/" },
      to: { path: "^(db|lib/city|lib/doors|app)/" },
    },
    {
      name: "capabilities-meet-at-faces",
      severity: "error",
      comment: "A capability of lib/city/ reaches another only through its face (index.ts), so what a folder keeps inside can change without its neighbours.",
      from: { path: "^lib/city/((?:logs/)?[^/]+)/" },
      to: { path: "^lib/city/(?:logs/)?[^/]+/", pathNot: ["^lib/city/$1/", "^lib/city/(?:logs/)?[^/]+/index\\.ts$"] },
    },
    {
      name: "doors-use-faces",
      severity: "error",
      comment: "Doors, pages, scripts and the city's top files use a capability only through its face (index.ts); only tests open a capability's folder.",
      from: { path: "^(app|lib|db|scripts)/|^(instrumentation|proxy)\\.ts$", pathNot: "^lib/city/(?:logs/)?[^/]+/" },
      to: { path: "^lib/city/(?:logs/)?[^/]+/", pathNot: "^lib/city/(?:logs/)?[^/]+/index\\.ts$" },
    },
    {
      name: "surfaces-are-built-from-doors",
      severity: "error",
      comment:
        "lib/doors/surfaces/ (OpenAPI, llms.txt, MCP, A2A, the discovery documents) are generated from the declarations and served through the pipeline: no declaration and no pipeline stage imports a surface.",
      from: { path: "^lib/doors/(declarations|pipeline)/" },
      to: { path: "^lib/doors/surfaces/" },
    },
    {
      name: "no-tests-or-scripts-in-the-city",
      severity: "error",
      comment: "What ships never imports a test helper or an operator script.",
      from: { path: "^(app|lib|db)/" },
      to: { path: "^(tests|scripts)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|\\.next)/" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
