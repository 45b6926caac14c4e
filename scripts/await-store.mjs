// Awaits the calls that return a promise now: each call of a store method (the interfaces of
// src/store/contract*.ts), and of every function this made async, in turn, until none is left.
// Made to bring synchronous store calls under the async contract (docs/architecture.md, Layout).
//
//   node scripts/await-store.mjs src/core,src/server,src/cli [known.json] [out.json]
//   node scripts/await-store.mjs test out.json
//
// It edits the files under the given folders in place: `x()` becomes `await x()` (`(await x())`
// before `.`), its function `async` (its return type `Promise<…>`), and a member an object
// literal implements gets `Promise<…>` in its interface. What it cannot do it prints as MANUAL
// (a callback of filter/map/every…, whose promise the array method would not wait for). The
// names it made async are written to out.json: hand them to the next run (the tests after
// src). Then `npx tsc --noEmit` finds the rest, such as a declared parameter type.
import ts from "typescript";
import fs from "node:fs";
import path from "node:path";
const root = process.cwd();
const editPrefixes = process.argv[2].split(",").map((p) => path.join(root, p));
const changedIn = process.argv[3];
const changedOut = process.argv[4] ?? "await-store.json";
const cfg = ts.getParsedCommandLineOfConfigFile(path.join(root, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
const changed = new Set(changedIn && fs.existsSync(changedIn) ? JSON.parse(fs.readFileSync(changedIn, "utf8")) : []);
const contractFiles = ["src/store/contract.ts", "src/store/contract-jobs.ts", "src/store/contract-inbound.ts", "src/store/contract-usage.ts"].map((f) => path.join(root, f));
const editable = (f) => editPrefixes.some((p) => f.startsWith(p)) && !f.includes("/src/store/") && !f.includes("/src/db/");
let program;

function declName(node) {
  let n = node;
  while (n) {
    if ((ts.isParameter(n) || ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isMethodSignature(n) || ts.isPropertySignature(n) || ts.isPropertyAssignment(n) || ts.isVariableDeclaration(n) || ts.isPropertyDeclaration(n)) && n.name && ts.isIdentifier(n.name)) return n.name.text;
    if (ts.isFunctionTypeNode(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isParenthesizedTypeNode(n) || ts.isUnionTypeNode(n)) { n = n.parent; continue; }
    return undefined;
  }
}
const keyOf = (decl) => { const name = declName(decl); return name && `${path.relative(root, decl.getSourceFile().fileName)}:${name}`; };
for (const f of contractFiles) {
  const text = fs.readFileSync(f, "utf8");
  for (const m of text.matchAll(/^  (\w+)\(/gm)) changed.add(`${path.relative(root, f)}:${m[1]}`);
}
function isPromise(checker, type) {
  if (type.isUnion()) return type.types.some((t) => isPromise(checker, t));
  return type.getSymbol()?.name === "Promise";
}
function asyncPos(fn, sf) {
  const mods = (fn.modifiers ?? []).filter((m) => m.kind === ts.SyntaxKind.ExportKeyword || m.kind === ts.SyntaxKind.DefaultKeyword);
  return mods.length ? mods[mods.length - 1].getEnd() + 1 : fn.getStart(sf);
}
function fnOf(node) {
  for (let n = node.parent; n; n = n.parent) if (ts.isFunctionLike(n) && n.body) return n;
}
const ARRAY = ["filter", "some", "every", "find", "findIndex", "forEach", "map", "flatMap", "sort", "reduce", "findLast"];
function callbackOfArray(fn, sf) {
  const call = fn.parent;
  if (!ts.isCallExpression(call) || !call.arguments.includes(fn)) return false;
  const callee = call.expression;
  if (ts.isPropertyAccessExpression(callee) && ARRAY.includes(callee.name.text)) {
    console.log(`MANUAL callback of ${callee.name.text} ${sf.fileName}:${sf.getLineAndCharacterOfPosition(fn.getStart()).line + 1}`);
    return true;
  }
  return false;
}
function run() {
  program = ts.createProgram(cfg.fileNames, cfg.options, undefined, program);
  const checker = program.getTypeChecker();
  const edits = new Map(); // file -> [{pos, text, end}]
  const add = (sf, pos, text, rank) => { if (!edits.has(sf.fileName)) edits.set(sf.fileName, []); edits.get(sf.fileName).push({ pos, text, rank }); };
  const madeAsync = new Set();
  let count = 0;
  function makeAsync(fn, sf) {
    if (madeAsync.has(fn)) return;
    madeAsync.add(fn);
    const isAsync = fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword);
    if (!isAsync) {
      if (ts.isGetAccessor(fn) || ts.isConstructorDeclaration(fn)) { console.log(`MANUAL accessor/ctor ${sf.fileName}:${sf.getLineAndCharacterOfPosition(fn.getStart()).line + 1}`); return; }
      add(sf, asyncPos(fn, sf), "async ", 1e9);
      if (fn.type && !/^Promise</.test(fn.type.getText(sf))) { add(sf, fn.type.getStart(sf), "Promise<", 0); add(sf, fn.type.getEnd(), ">", 0); }
      propagate(fn, sf);
    }
  }
  function propagate(fn, sf) {
    const k = keyOf(fn);
    if (k && !changed.has(k)) { changed.add(k); count++; }
    // A function standing for a declared member: that member returns a promise now.
    let holder = fn.parent;
    let name;
    if (ts.isMethodDeclaration(fn) && ts.isObjectLiteralExpression(fn.parent)) { holder = fn.parent; name = fn.name.getText(sf); }
    else if (ts.isPropertyAssignment(fn.parent) && ts.isObjectLiteralExpression(fn.parent.parent)) { holder = fn.parent.parent; name = fn.parent.name.getText(sf); }
    else return;
    const ctx = checker.getContextualType(holder);
    const prop = ctx && (ctx.isUnion() ? ctx.types.map((t) => t.getProperty(name)).find(Boolean) : ctx.getProperty(name));
    for (const d of prop?.declarations ?? []) {
      const dsf = d.getSourceFile();
      const key = keyOf(d);
      if (key && !changed.has(key)) { changed.add(key); count++; }
      if (!editable(dsf.fileName)) continue;
      let ret = ts.isMethodSignature(d) ? d.type : ts.isPropertySignature(d) && d.type && ts.isFunctionTypeNode(d.type) ? d.type.type : undefined;
      if (ret && !/^Promise</.test(ret.getText(dsf)) && !ret.getText(dsf).includes("Promise<")) {
        add(dsf, ret.getStart(dsf), "Promise<", 0); add(dsf, ret.getEnd(), ">", 0); count++;
      }
    }
  }
  for (const sf of program.getSourceFiles()) {
    if (!editable(sf.fileName)) continue;
    const visit = (node) => {
      ts.forEachChild(node, visit);
      if (!ts.isCallExpression(node)) return;
      const sig = checker.getResolvedSignature(node);
      const decl = sig?.declaration;
      if (!decl) return;
      const k = keyOf(decl);
      if (!k || !changed.has(k)) return;
      if (!isPromise(checker, checker.getTypeAtLocation(node))) return;
      let p = node.parent;
      while (ts.isParenthesizedExpression(p)) p = p.parent;
      if (ts.isAwaitExpression(p) || ts.isVoidExpression(p)) return;
      const fn = fnOf(node);
      if (ts.isPropertyAccessExpression(p) && ["then", "catch", "finally"].includes(p.name.text)) return;
      if (ts.isArrowFunction(p) && p.body === node) { if (!callbackOfArray(p, sf) && !p.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) { madeAsync.add(p); propagate(p, sf); } return; }
      if (ts.isReturnStatement(p) && fn && fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) return;
      if (ts.isArrayLiteralExpression(p) || ts.isSpreadElement(p)) { console.log(`MANUAL in array ${sf.fileName}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`); return; }
      const paren = ts.isPropertyAccessExpression(p) || ts.isElementAccessExpression(p) || (ts.isCallExpression(p) && p.expression === node) || ts.isNonNullExpression(p) || ts.isTaggedTemplateExpression(p);
      const end = node.getEnd();
      add(sf, node.getStart(sf), paren ? "(await " : "await ", -end);
      if (paren) add(sf, end, ")", -1e12);
      count++;
      if (fn && !callbackOfArray(fn, sf)) makeAsync(fn, sf);
    };
    visit(sf);
  }
  for (const [file, list] of edits) {
    let text = fs.readFileSync(file, "utf8");
    // Right to left; at one position, the inner wrap first so the outer ends up leftmost.
    list.sort((a, b) => b.pos - a.pos || b.rank - a.rank);
    const seen = new Set();
    for (const e of list) {
      const id = `${e.pos}:${e.text}:${e.rank}`;
      if (seen.has(id)) continue;
      seen.add(id);
      text = text.slice(0, e.pos) + e.text + text.slice(e.pos);
    }
    fs.writeFileSync(file, text);
  }
  return count;
}
for (let i = 0; i < 15; i++) {
  const n = run();
  console.log(`iteration ${i}: ${n} changes`);
  if (n === 0) break;
}
fs.writeFileSync(changedOut, JSON.stringify([...changed], null, 0));
