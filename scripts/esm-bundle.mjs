// What every ESM bundle of the agent's code shares (scripts/build.mjs for dist/nodenet.js, bench/proxy-sync
// for its case processes): the packages left external, and the banner giving bundled CommonJS a require().

/** Packages with native addons: node loads their .node files, so they cannot be bundled. */
export const NATIVE = ['better-sqlite3', 'koffi', 'netlink', '@resvg/resvg-js'];

/** esbuild's `external` for them: each package and its subpaths. */
export const NATIVE_EXTERNAL = NATIVE.flatMap((d) => [d, `${d}/*`]);

/** CommonJS code bundled into ESM calls require() for node's builtins: give every chunk a real one. */
export const REQUIRE_BANNER = "import { createRequire as __nodenetCreateRequire } from 'node:module'; const require = __nodenetCreateRequire(import.meta.url);";
