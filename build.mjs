// Builds dist/bridge: one executable that needs neither Node nor node_modules,
// using Node's Single Executable Application (SEA) support:
//   1. esbuild bundles src/cli/bin.ts into dist/bridge.cjs (CommonJS, and one whose
//      require() will only load builtins, so everything else must be in the bundle),
//      and src/sea/heavy.ts into dist/heavy.cjs, which the main bundle compiles only
//      when a command imports it;
//   2. this Node binary turns a small loader (dist/main.cjs, the SEA's main) plus the
//      assets, the two bundles, the main bundle's code cache and the better-sqlite3
//      addon (see src/sea/addon.ts), into a blob;
//   3. postject injects the blob into a copy of this Node binary;
//   4. that executable runs one command, which writes the code cache, and steps 2-3
//      are done again with it (see loaderSource).
// Run with Node 24 (npm run build puts node_modules/.bin first on PATH): the
// blob is tied to the exact binary that makes it, and that binary is the base.
//
// BRIDGE_ENTRY=path/to/entry.ts overrides the entry (for trying the pipeline
// out on a throwaway script).
import { build } from "esbuild";
import { execFile, execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import postject from "postject";

const started = performance.now();
const execFileAsync = promisify(execFile);
const root = dirname(fileURLToPath(import.meta.url));
/** Left out of the bundles: a dependency's optional module, behind an API bridge does not use. */
const OPTIONAL = ["pg-native"];
const dist = join(root, "dist");
const entry = resolve(root, process.env.BRIDGE_ENTRY || "src/cli/bin.ts");
const bundle = join(dist, "bridge.cjs");
const heavyEntry = join(root, "src/sea/heavy.ts");
const heavyBundle = join(dist, "heavy.cjs");
const HEAVY_ASSET = "heavy.cjs"; // its name inside the executable
const loader = join(dist, "main.cjs");
const MAIN_ASSET = "bridge.cjs";
const codeCache = join(dist, "bridge.cache");
const CACHE_ASSET = "bridge.cache";
const cacheCheck = join(dist, "bridge.cache-check");
// Set only by this build, for the run that records the code cache (trainCodeCache).
const TRAIN_VARIABLE = "BRIDGE_BUILD_WRITE_CODE_CACHE";
const seaConfig = join(dist, "sea-config.json");
const blob = join(dist, "sea-prep.blob");
const output = join(dist, "bridge");
// Documented by Node; the copy of node must contain it exactly once.
const FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";

try {
  await main();
} catch (error) {
  console.error(`build failed: ${error instanceof Error ? error.message : String(error)}`);
  // Never leave a half-made executable, or a stale one a test could mistake
  // for this build, behind.
  await rm(output, { force: true });
  process.exitCode = 1;
} finally {
  await rm(blob, { force: true });
  await rm(cacheCheck, { force: true });
  await rm(seaConfig, { force: true });
}

async function main() {
  const major = Number(process.versions.node.split(".")[0]);
  if (major < 24) {
    throw new Error(
      `Node ${process.version} at ${process.execPath} would become the base of dist/bridge; ` +
        "use Node 24+ (npm run build, or PATH=$PWD/node_modules/.bin:$PATH)",
    );
  }
  if (process.platform !== "linux" && process.platform !== "darwin") {
    throw new Error(`building on ${process.platform} is not supported`);
  }
  await stat(entry).catch(() => {
    throw new Error(`entry ${entry} does not exist`);
  });
  // The addon is the one piece that cannot be bundled; pick the prebuild for
  // this machine, as the executable will only run on this platform anyway.
  const addon = join(root, "node_modules/better-sqlite3/prebuilds", `${process.platform}-${process.arch}.node`);
  await stat(addon).catch(() => {
    throw new Error(`no better-sqlite3 prebuild for ${process.platform}-${process.arch} (${addon})`);
  });

  await mkdir(dist, { recursive: true });
  // The executable names its addon cache directory by this hash (src/sea/addon.ts).
  const addonSha256 = createHash("sha256").update(await readFile(addon)).digest("hex");
  const commit = buildCommit();
  const main = await bundleEntry(entry, bundle, { addonSha256, commit }, [lazyChildProcess(), heavyAsset()]);
  const heavy = await bundleEntry(heavyEntry, heavyBundle, { addonSha256, commit }, [standIns()]);
  // The heavy bundle carries its own copy of all it imports: a CLI module in it would be a
  // second copy, out of step with the first (src/sea/heavy.ts).
  const cliInHeavy = Object.keys(heavy.inputs).filter((input) => /^src[\\/]cli[\\/]/.test(input));
  if (cliInHeavy.length > 0) {
    throw new Error(`src/sea/heavy.ts imports ${cliInHeavy[0]}; the heavy bundle must import nothing from src/cli`);
  }
  // Start-up time of every command depends on these staying out of the main bundle.
  const leaked = Object.keys(main.inputs).filter((input) => /node_modules[\\/](zod|h3|consola|ofetch|libphonenumber-js)[\\/]/.test(input));
  if (leaked.length > 0) {
    throw new Error(`the main bundle includes ${leaked[0]}; import it through src/sea/heavy.ts instead`);
  }

  // The loader's script has no import() (Node's hook for one warns that it is experimental).
  const dynamic = Object.values(main.outputs).flatMap((out) => out.imports).filter((imp) => imp.kind === "dynamic-import" && imp.external);
  if (dynamic.length > 0) {
    throw new Error(`the main bundle imports ${dynamic[0].path} with import(); use process.getBuiltinModule() for a builtin`);
  }
  await writeFile(loader, loaderSource());
  // Built twice: the first executable runs a command to record which of the bundle's
  // functions it compiles, and the second carries them compiled (see loaderSource).
  await writeFile(codeCache, "");
  await makeExecutable(addon, codeCache);
  if ((await trainCodeCache(codeCache)) !== undefined) {
    await makeExecutable(addon, codeCache);
    // The same command again, into a file thrown away: V8 must take the cache it wrote.
    const stderr = await trainCodeCache(cacheCheck);
    if (stderr === undefined || stderr.includes("code cache not used")) throw new Error("dist/bridge does not use the code cache it was built with");
  }

  const { size } = await stat(output);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`built ${relative(process.cwd(), output) || output} (${(size / 1e6).toFixed(1)} MB) in ${seconds}s`);
}

/** dist/bridge from the bundles, with `cacheFile` as the main bundle's code cache. */
async function makeExecutable(addon, cacheFile) {
  await writeFile(
    seaConfig,
    JSON.stringify(
      {
        main: loader,
        output: blob,
        disableExperimentalSEAWarning: true,
        useCodeCache: true,
        // Memory under load (docs/PERFORMANCE.md has the measurements):
        // - a small young generation, fixed from the start: under load V8 otherwise grows
        //   it many times over, and a command starting smaller collects more often;
        // - a modest old-generation limit: V8 picks how far the heap may grow past what is
        //   live from it, and the default (from the machine's RAM) lets it grow far past
        //   bridge's small live heap; request bodies are buffers outside it;
        // - one V8 helper thread instead of four: each keeps its own malloc arena.
        // Not every V8 flag can go here: one that changes V8's flag hash (such as
        // --heap-growing-percent) makes it reject the code cache, and every command
        // starts slower (test/e2e/binary.test.ts checks for the warning).
        execArgv: ["--max-semi-space-size=2", "--min-semi-space-size=2", "--max-old-space-size=256", "--v8-pool-size=1"],
        assets: { "better_sqlite3.node": addon, [HEAVY_ASSET]: heavyBundle, [MAIN_ASSET]: bundle, [CACHE_ASSET]: cacheFile },
      },
      null,
      2,
    ),
  );
  run(process.execPath, ["--experimental-sea-config", seaConfig]);

  // Unlink first: overwriting a dist/bridge that is still running fails
  // with ETXTBSY, while replacing the directory entry does not.
  await rm(output, { force: true });
  await copyFile(process.execPath, output);
  await chmod(output, 0o755); // The source may be read-only (e.g. 0555); postject needs to write.
  if (process.platform === "darwin") run("codesign", ["--remove-signature", output]);
  // postject's ELF parser complains about Node's unusual .note sections; the
  // result is fine (nodejs/postject#83), so keep those lines out of the log.
  const warn = console.warn;
  console.warn = (...args) => {
    if (!String(args[0]).startsWith("warning: Can't find string offset for section name")) warn(...args);
  };
  try {
    await postject.inject(output, "NODE_SEA_BLOB", await readFile(blob), {
      sentinelFuse: FUSE,
      machoSegmentName: "NODE_SEA",
    });
  } finally {
    console.warn = warn;
  }
  if (process.platform === "darwin") run("codesign", ["--sign", "-", output]);
}

/**
 * The commit this build is made from, as `bridge --version` names it: the short hash,
 * with "-dirty" when tracked files differ from it; "unknown" outside a git checkout.
 */
function buildCommit() {
  const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const hash = git("rev-parse", "--short=12", "HEAD");
    return git("status", "--porcelain", "--untracked-files=no") ? `${hash}-dirty` : hash;
  } catch {
    return "unknown";
  }
}

async function bundleEntry(entryPoint, outfile, { addonSha256, commit }, plugins) {
  const result = await build({
    entryPoints: [entryPoint],
    outfile,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    // Whitespace and syntax only: keeping identifiers keeps stack traces
    // readable without shipping a source map.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "none",
    // ESM packages may read import.meta, which is empty in CommonJS. Give them
    // this file's URL, as they would get unbundled. (Inside the executable,
    // __filename is the executable itself.)
    define: { "import.meta": "__bridge_import_meta", BRIDGE_ADDON_SHA256: JSON.stringify(addonSha256), BRIDGE_COMMIT: JSON.stringify(commit) },
    banner: {
      js: 'var __bridge_import_meta={url:require("node:url").pathToFileURL(__filename).href,filename:__filename,dirname:__dirname};',
    },
    // Lets a BRIDGE_ENTRY outside the repository use our dependencies.
    nodePaths: [join(root, "node_modules")],
    // pg's optional native binding: required only by pg.native, which bridge never reads.
    external: OPTIONAL,
    plugins,
    metafile: true,
    logLevel: "warning",
  }).catch((error) => {
    // esbuild has printed the details of errors in the code, but not of a plugin's onEnd.
    const first = error.errors?.[0]?.text ?? error.message;
    throw new Error(`esbuild failed with ${error.errors?.length ?? "unknown"} error(s), the first: ${first}`);
  });

  // Inside the executable there is no node_modules, and require() loads
  // builtins only: anything esbuild left external must be a builtin (or never loaded).
  const builtins = new Set([...builtinModules.flatMap((name) => [name, `node:${name}`]), ...OPTIONAL]);
  const missing = Object.values(result.metafile.outputs)
    .flatMap((out) => out.imports)
    .filter((imp) => imp.external && !builtins.has(imp.path))
    .map((imp) => JSON.stringify(imp.path));
  if (missing.length > 0) {
    throw new Error(`the bundle would load these at run time, which the executable cannot: ${[...new Set(missing)].join(", ")}`);
  }
  await escapeNonAscii(outfile);
  return result.metafile;
}

// esbuild escapes non-ASCII characters, but not in regular expression literals, and
// one such character (a router's /[\w$\x80-\uFFFC]/) made V8 hold the whole source
// as a two-byte string, twice its size in the server's heap. A \uXXXX
// escape means the same in a regular expression literal as in a string literal.
async function escapeNonAscii(file) {
  const code = await readFile(file, "utf8");
  const ascii = code.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  if (ascii !== code) await writeFile(file, ascii);
}

// commander imports node:child_process, which loads net, dgram and more (slowing every
// command's start-up), only to run subcommands that are separate executables; bridge has
// none. Hand it a stand-in that loads the real module on first use.
// Its other default imports of builtins (node:fs, node:path, node:process) get stand-ins
// that hand over the module itself: esbuild's own interop for a default import copies
// every property of the module onto a new object (on every start, ~1 ms with process's
// getters).
function lazyChildProcess() {
  const builtins = { "node:child_process": 'new Proxy({}, { get: (_, name) => require("node:child_process")[name] })' };
  for (const name of ["node:fs", "node:path", "node:process"]) builtins[name] = `require(${JSON.stringify(name)})`;
  return {
    name: "lazy-child-process",
    setup(build) {
      build.onResolve({ filter: /^node:(child_process|fs|path|process)$/ }, (args) =>
        /[\\/]commander[\\/]/.test(args.importer) ? { path: args.path, namespace: "commander-builtin" } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "commander-builtin" }, (args) => ({
        contents: `export default ${builtins[args.path]};`,
        loader: "js",
      }));
    },
  };
}

// Modules the heavy bundle would carry, and the server load, for nothing. Each is
// replaced by a stand-in when the named package imports it:
// - zod's namespace object carries every locale's messages, 300 KB of source the server
//   would hold. bridge never switches locale, and zod registers English from
//   locales/en.js, which stays. z.locales is empty.
// - ofetch's Node build imports node-fetch-native, a fetch polyfill of 120 KB that loads
//   zlib, worker_threads and web streams when it starts, and uses it only where
//   globalThis.fetch is missing. Node 24 has it; bridge's clients bring their own anyway
//   (src/core/clients/transport.ts).
function standIns() {
  const modules = [
    { importer: /[\\/]node_modules[\\/]zod[\\/]/, path: "../locales/index.js", contents: "export {};" },
    {
      importer: /[\\/]node_modules[\\/]ofetch[\\/]/,
      path: "node-fetch-native",
      contents: "export default globalThis.fetch; export const { Headers, AbortController } = globalThis;",
    },
  ];
  return {
    name: "stand-ins",
    setup(build) {
      const used = new Set();
      build.onResolve({ filter: /.*/ }, (args) => {
        const index = modules.findIndex((s) => s.path === args.path && s.importer.test(args.importer));
        if (index === -1) return undefined;
        used.add(index);
        return { path: String(index), namespace: "stand-in" };
      });
      build.onLoad({ filter: /.*/, namespace: "stand-in" }, (args) => ({ contents: modules[Number(args.path)].contents, loader: "js" }));
      // A dependency update that moves one of these imports would quietly bring it back.
      build.onEnd((result) => {
        if (result.errors.length > 0) return; // the import may not have been reached
        const stale = modules.filter((_, index) => !used.has(index)).map((s) => s.path);
        if (stale.length > 0) throw new Error(`no import of ${stale.join(", ")} to replace: update build.mjs`);
      });
    },
  };
}

// The main bundle gets src/sea/heavy.ts as a stub that compiles the heavy.cjs asset as a
// CommonJS module on first import, so commands that never import it never pay for it.
function heavyAsset() {
  return {
    name: "heavy-asset",
    setup(build) {
      build.onResolve({ filter: /^\.\.\/sea\/heavy\.ts$/ }, (args) =>
        resolve(args.resolveDir, args.path) === heavyEntry ? { path: HEAVY_ASSET, namespace: "sea-asset" } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: "sea-asset" }, () => ({
        contents: `
          const source = require("node:sea").getAsset(${JSON.stringify(HEAVY_ASSET)}, "utf8");
          const params = ["exports", "require", "module", "__filename", "__dirname"];
          const load = require("node:vm").compileFunction(source, params, { filename: ${JSON.stringify(HEAVY_ASSET)} });
          load.call(module.exports, module.exports, require, module, __filename, __dirname);`,
        loader: "js",
      }));
    },
  };
}

// The executable's main script. Node compiles a SEA's main ahead with useCodeCache, but
// only its top level: every function is compiled again from source when first called,
// about a sixth of `locations list`'s CPU. This loader compiles the main bundle itself,
// with a code cache V8 wrote after a command had run (trainCodeCache), which holds the
// functions that run compiled. A cache V8 rejects (another V8, other flags) only costs
// that compiling again: the same code runs either way.
function loaderSource() {
  return `const sea = require("node:sea");
const source = sea.getAsset(${JSON.stringify(MAIN_ASSET)}, "utf8");
const cache = new Uint8Array(sea.getAsset(${JSON.stringify(CACHE_ASSET)}));
const wrapped = "(function (exports, require, module, __filename, __dirname) {" + source + "\\n})";
const script = new (require("node:vm").Script)(wrapped, { filename: ${JSON.stringify(MAIN_ASSET)}, cachedData: cache.byteLength > 0 ? cache : undefined });
const out = process.env.${TRAIN_VARIABLE};
if (out) {
  if (script.cachedDataRejected !== false) process.stderr.write("code cache not used\\n");
  // "wx": a file that exists is never overwritten, whatever the variable names.
  process.once("exit", () => require("node:fs").writeFileSync(out, script.createCachedData(), { flag: "wx" }));
}
script.runInThisContext().call(module.exports, module.exports, require, module, __filename, __dirname);
`;
}

/**
 * Runs \`locations list --json\` (the bench's start-up command) in dist/bridge on a fresh
 * database, which writes the code cache to \`file\`; resolves to what it wrote on stderr.
 * Undefined, with a warning, when it could not: the executable is then built without
 * one, correct but slower to start.
 */
async function trainCodeCache(file) {
  const dir = await mkdtemp(join(dist, "train-"));
  try {
    const db = join(dir, "bridge.db");
    await makeDatabase(db);
    await rm(file, { force: true });
    const env = { PATH: process.env.PATH, HOME: dir, XDG_CACHE_HOME: join(dir, "cache"), [TRAIN_VARIABLE]: file };
    const { stderr } = await execFileAsync(output, ["locations", "list", "--json", "--db", db], { cwd: dir, env, encoding: "utf8" });
    if ((await stat(file)).size === 0) throw new Error("it wrote no code cache");
    return stderr;
  } catch (error) {
    console.warn(`warning: built without a code cache for the main bundle (${error.stderr || error.message}): every command starts slower`);
    await writeFile(file, "");
    return undefined;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// One location, as the bench stores them, so that listing one is compiled too.
function makeDatabaseScript() {
  return `
const db = require("./src/db/index.ts").openDb(process.argv[2]);
db.prepare(\`INSERT INTO tokens (location_id, company_id, access_token, refresh_token, expires_at, installed_at,
  updated_at, sender_id, sms_api_key) VALUES ('loc-1', 'company-1', 'at', 'rt', 0, 0, 0, 'SENDER', 'sms-key-0123456789')\`).run();
db.close();`;
}

/** A new database of this bridge's schema at \`file\`, made by src/db/index.ts with node_modules' better-sqlite3. */
async function makeDatabase(file) {
  const script = join(dirname(file), "make-db.cjs");
  await build({
    stdin: { contents: makeDatabaseScript(), resolveDir: root, loader: "js" },
    outfile: script,
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node24",
    external: ["better-sqlite3"],
    nodePaths: [join(root, "node_modules")],
    logLevel: "error",
  });
  execFileSync(process.execPath, [script, file], { cwd: root, stdio: ["ignore", "ignore", "pipe"] });
}

function run(command, args) {
  try {
    execFileSync(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    const output = `${error.stdout ?? ""}${error.stderr ?? ""}`.trim();
    throw new Error(`${command} ${args.join(" ")} failed${output ? `:\n${output}` : `: ${error.message}`}`);
  }
}
