// @ts-check
// TypeScript call-edge oracle: resolve every call site under a folder with the TypeScript compiler.
//
// An independent reference for lgrep's call graph (callers/callees of a symbol). It builds one
// ts.Program over the .ts/.tsx/.mts/.cts files under --under (relative to --root) and, for every
// CallExpression and NewExpression whose callee is an Identifier or a property access
// (`foo()`, `new Foo()`, `a.b.foo()`, `a?.foo()`), asks the type checker for the symbol of the
// callee's NAME token, follows import/export aliases (checker.getAliasedSymbol) and records the
// symbol's declarations. One JSON line per call site, the same format as jedi_calls.py:
//
//   {"path":"packages/zod/src/v4/classic/schemas.ts","line":521,"column":12,"name":"normalizeParams",
//    "targets":[{"path":"packages/zod/src/v4/core/util.ts","line":509,"name":"normalizeParams"}],
//    "external":false}
//
// - targets: declarations inside --root (line of the declaration's name token). Type-only
//   declarations merged with the value (interface/type alias/namespace next to a const or class of
//   the same name) are dropped, and so are overload signatures when the implementation is there (as
//   jedi does for @overload); a constructor call resolves to the class (or the const holding it).
// - external: every declaration lies outside --root (lib.*.d.ts, node_modules).
// - unresolved: no symbol, an alias to a module that was not found, a symbol without declarations,
//   or a call through a parameter (the oracle cannot know what is passed).
// Calls whose callee is not a name (`f()()`, `a[k]()`, `super()`, `import()`) are counted as skipped.
//
// Compiler options: --tsconfig FILE, else the nearest tsconfig.json from --under up to --root,
// else defaults (strict, target/lib ESNext + DOM, module ESNext, moduleResolution Bundler, no JS).
// --alias 'spec=path' (repeatable; path relative to --root, `*` allowed) adds `paths` entries, for
// a package that imports itself by name (zod's tests import "zod/v4") when its package.json is not
// in the checkout.
//
// Usage (ts_calls.sh installs the pinned typescript and sets LGREP_ORACLES_CACHE):
//   node tools/oracles/ts_calls.mjs --root CHECKOUT --under packages/zod/src --out zod.jsonl \
//     [--alias 'zod=packages/zod/src/index.ts' --alias 'zod/*=packages/zod/src/*/index.ts'] [--tsconfig F]

import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import process from "node:process";
import { parseArgs } from "node:util";

const CACHE = process.env.LGREP_ORACLES_CACHE || path.join(os.homedir(), ".cache", "lgrep-oracles");
/** @type {typeof import("typescript")} */
const ts = createRequire(path.join(CACHE, "package.json"))("typescript");

const NO_INPUTS_FOUND = 18003;
const SOURCE_EXTENSIONS = [".ts", ".tsx", ".mts", ".cts"];

/** Declarations that only give a name a type meaning: never what a call runs. */
const TYPE_ONLY_KINDS = new Set([
  ts.SyntaxKind.InterfaceDeclaration,
  ts.SyntaxKind.TypeAliasDeclaration,
  ts.SyntaxKind.TypeParameter,
  ts.SyntaxKind.ModuleDeclaration,
]);

/**
 * @typedef {{ path: string, line: number, name: string }} Target
 * @typedef {{ path: string, line: number, column: number, name: string, targets: Target[],
 *             external: boolean, unresolved?: true }} CallSite
 */

/** @param {string} dir @returns {string[]} */
function sourceFiles(dir) {
  /** @type {string[]} */
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && !entry.name.startsWith(".")) out.push(...sourceFiles(full));
    } else if (entry.isFile() && SOURCE_EXTENSIONS.some((ext) => entry.name.endsWith(ext))) {
      out.push(full);
    }
  }
  return out.sort();
}

/** The nearest tsconfig.json from `start` up to `root` (inclusive), or undefined. */
/** @param {string} start @param {string} root @returns {string | undefined} */
function findTsconfig(start, root) {
  for (let dir = start; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "tsconfig.json");
    if (fs.existsSync(candidate)) return candidate;
    if (dir === root || path.dirname(dir) === dir) return undefined;
  }
}

/**
 * Compiler options from a tsconfig (when one is given or found and parses), else defaults.
 * @param {string | undefined} tsconfig
 * @returns {{ options: import("typescript").CompilerOptions, source: string }}
 */
function compilerOptions(tsconfig) {
  if (tsconfig) {
    const read = ts.readConfigFile(tsconfig, ts.sys.readFile);
    if (!read.error) {
      const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, path.dirname(tsconfig));
      // The config's own file list does not matter (the files under --under are the roots), so
      // "No inputs were found in config file" is no error here.
      const errors = parsed.errors.filter((d) => d.code !== NO_INPUTS_FOUND);
      if (errors.length === 0) return { options: parsed.options, source: tsconfig };
      const messages = errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      process.stderr.write(`tsconfig ${tsconfig} has errors, using defaults:\n  ${messages.join("\n  ")}\n`);
    } else {
      process.stderr.write(`tsconfig ${tsconfig} does not load, using defaults\n`);
    }
  }
  return {
    options: {
      target: ts.ScriptTarget.ESNext,
      lib: ["lib.esnext.d.ts", "lib.dom.d.ts"],
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      strict: true,
      allowJs: false,
      esModuleInterop: true,
      resolveJsonModule: true,
      skipLibCheck: true,
      types: [],
    },
    source: "defaults",
  };
}

/**
 * @param {import("typescript").Node} node
 * @returns {node is import("typescript").FunctionDeclaration | import("typescript").MethodDeclaration
 *   | import("typescript").ConstructorDeclaration}
 */
function isFunctionOrMethod(node) {
  return ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node);
}

/** @param {string} text @param {number} lineStart @param {number} pos 0-based column in code points */
function codePointColumn(text, lineStart, pos) {
  return Array.from(text.slice(lineStart, pos)).length;
}

/**
 * The name token of a call's callee, or undefined (element access, call result, super, import).
 * @param {import("typescript").Expression} callee
 * @returns {import("typescript").Identifier | import("typescript").PrivateIdentifier | undefined}
 */
function calleeName(callee) {
  let expr = callee;
  while (ts.isParenthesizedExpression(expr) || ts.isNonNullExpression(expr)) expr = expr.expression;
  if (ts.isIdentifier(expr)) return expr;
  if (ts.isPropertyAccessExpression(expr)) return expr.name;
  return undefined;
}

/**
 * @param {string} file
 * @param {string} root
 */
function relativeInRoot(file, root) {
  const rel = path.relative(root, fs.realpathSync(file));
  if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join("/");
}

function main() {
  const { values } = parseArgs({
    options: {
      root: { type: "string" },
      under: { type: "string" },
      out: { type: "string" },
      tsconfig: { type: "string" },
      alias: { type: "string", multiple: true, default: [] },
    },
    strict: true,
  });
  if (!values.root || !values.under || !values.out) {
    process.stderr.write("usage: ts_calls.mjs --root DIR --under SUBDIR --out FILE [--tsconfig F] [--alias SPEC=PATH]...\n");
    process.exit(2);
  }
  const started = Date.now();
  const root = fs.realpathSync(values.root);
  const under = path.join(root, values.under);
  const files = sourceFiles(under);

  const { options, source } = compilerOptions(values.tsconfig ?? findTsconfig(under, root));
  /** @type {Record<string, string[]>} */
  const paths = { ...(options.paths ?? {}) };
  for (const spec of values.alias ?? []) {
    const eq = spec.indexOf("=");
    if (eq <= 0) throw new Error(`--alias wants SPEC=PATH, got ${spec}`);
    (paths[spec.slice(0, eq)] ??= []).push(path.join(root, spec.slice(eq + 1)));
  }
  if (Object.keys(paths).length > 0) options.paths = paths;
  options.noEmit = true;

  const program = ts.createProgram({ rootNames: files, options });
  const checker = program.getTypeChecker();

  /** @type {Map<string, number>} */
  const missingModules = new Map();
  let nSites = 0, nSkipped = 0, nInRepo = 0, nExternal = 0, nUnresolved = 0;
  const out = fs.openSync(values.out, "w");

  /**
   * @param {import("typescript").Symbol} symbol
   * @returns {import("typescript").Declaration[]}
   */
  function calleeDeclarations(symbol) {
    const declarations = symbol.declarations ?? [];
    let values = declarations.filter((d) => !TYPE_ONLY_KINDS.has(d.kind));
    if (values.length === 0) return declarations;
    // An overloaded function or method: the implementation stands for its overload signatures.
    if (values.some((d) => isFunctionOrMethod(d) && d.body !== undefined)) {
      values = values.filter((d) => !isFunctionOrMethod(d) || d.body !== undefined);
    }
    return values;
  }

  /**
   * @param {import("typescript").Identifier | import("typescript").PrivateIdentifier} name
   * @param {string} relPath
   * @param {import("typescript").SourceFile} sf
   * @returns {CallSite}
   */
  function resolve(name, relPath, sf) {
    const start = name.getStart(sf);
    const { line, character } = sf.getLineAndCharacterOfPosition(start);
    const lineStart = sf.getPositionOfLineAndCharacter(line, 0);
    /** @type {CallSite} */
    const site = {
      path: relPath,
      line: line + 1,
      column: codePointColumn(sf.text, lineStart, lineStart + character),
      name: name.text,
      targets: [],
      external: false,
    };
    let symbol = checker.getSymbolAtLocation(name);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    const declarations = symbol ? calleeDeclarations(symbol) : [];
    if (declarations.length === 0 || declarations.every((d) => ts.isParameter(d))) {
      site.unresolved = true;
      return site;
    }
    /** @type {Map<string, Target>} */
    const targets = new Map();
    for (const decl of declarations) {
      const declFile = decl.getSourceFile();
      const rel = relativeInRoot(declFile.fileName, root);
      if (rel === undefined) continue;
      const nameNode = ts.getNameOfDeclaration(decl) ?? decl;
      const declLine = declFile.getLineAndCharacterOfPosition(nameNode.getStart(declFile)).line + 1;
      const declName = ts.isIdentifier(nameNode) || ts.isPrivateIdentifier(nameNode) ? nameNode.text : symbol?.getName() ?? "";
      targets.set(`${rel}\0${declLine}\0${declName}`, { path: rel, line: declLine, name: declName });
    }
    site.targets = [...targets.values()].sort(
      (a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    );
    site.external = site.targets.length === 0;
    return site;
  }

  for (const file of files) {
    const sf = program.getSourceFile(file);
    if (!sf) continue;
    const relPath = relativeInRoot(file, root) ?? file;
    /** @type {CallSite[]} */
    const sites = [];
    /** @param {import("typescript").Node} node */
    const visit = (node) => {
      if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
        if (ts.isStringLiteral(node.moduleSpecifier) && !checker.getSymbolAtLocation(node.moduleSpecifier)) {
          const spec = node.moduleSpecifier.text;
          missingModules.set(spec, (missingModules.get(spec) ?? 0) + 1);
        }
      }
      if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
        const name = calleeName(node.expression);
        if (name) sites.push(resolve(name, relPath, sf));
        else nSkipped += 1;
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    sites.sort((a, b) => a.line - b.line || a.column - b.column);
    for (const site of sites) {
      nSites += 1;
      if (site.targets.length > 0) nInRepo += 1;
      else if (site.external) nExternal += 1;
      else nUnresolved += 1;
      fs.writeSync(out, JSON.stringify(site) + "\n");
    }
  }
  fs.closeSync(out);

  const missing = [...missingModules.entries()].sort((a, b) => b[1] - a[1]).map(([m, n]) => `${m} (${n})`);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `typescript ${ts.version}, options from ${source}: files=${files.length} call_sites=${nSites} ` +
      `in_repo=${nInRepo} external=${nExternal} unresolved=${nUnresolved} ` +
      `(calls without a name callee, not examined=${nSkipped}) time=${seconds}s -> ${values.out}\n` +
      (missing.length > 0 ? `modules not found (imports): ${missing.join(", ")}\n` : ""),
  );
}

main();
