#!/usr/bin/env node
// compat-report.mjs — sums up a `go test -json` run of the compatibility
// tests per kind, for scripts/compat-latest.
//
// Usage: node compat-report.mjs <go-test.json> <kind>=<TestA|TestB|…> …
//
// A compatibility test compares scribe's answers with the SDK's and fails
// on a difference, printing it. Per kind this prints how many of its tests
// found every answer identical (passed), how many found a difference
// (failed) and how many did not run (skipped, or not found in the run),
// then the first differences as the tests printed them, line for line
// (the first PER_TEST lines of each test, at most MAX_LINES per kind; a
// line over MAX_CHARS characters is cut, saying how much). A package that did not build is
// reported as such. Exit 0 whatever the answers; 2 on a usage error.

import fs from 'node:fs';

const MAX_LINES = 40;
const PER_TEST = 12; // lines of each test that found differences, so each shows its first
const [file, ...kindArgs] = process.argv.slice(2);
if (!file || kindArgs.length === 0 || kindArgs.some((k) => !k.includes('='))) {
  process.stderr.write('usage: compat-report.mjs <go-test.json> <kind>=<TestA|TestB|…> …\n');
  process.exit(2);
}
const kinds = kindArgs.map((k) => {
  const [name, tests] = k.split('=');
  return { name, tests: tests.split('|') };
});

// Per top-level test: its action (pass/fail/skip), its output lines.
const tests = new Map();
const pkgOutput = new Map(); // package → output lines outside any test
const pkgAction = new Map();
for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
  if (!line.startsWith('{')) continue;
  let ev;
  try {
    ev = JSON.parse(line);
  } catch {
    continue;
  }
  if (!ev.Test) {
    if (ev.Action === 'output') pkgOutput.set(ev.Package, [...(pkgOutput.get(ev.Package) ?? []), ev.Output]);
    if (['pass', 'fail', 'skip'].includes(ev.Action)) pkgAction.set(ev.Package, ev.Action);
    continue;
  }
  const top = ev.Test.split('/')[0];
  const t = tests.get(top) ?? { pkg: ev.Package, action: '', output: [] };
  if (ev.Action === 'output') t.output.push(ev.Output);
  if (ev.Test === top && ['pass', 'fail', 'skip'].includes(ev.Action)) t.action = ev.Action;
  tests.set(top, t);
}

// shown is a line of output as the test printed it, cut after MAX_CHARS
// (saying how much was left out).
const MAX_CHARS = 2000;
function shown(l) {
  l = l.replace(/\n$/, '');
  return l.length > MAX_CHARS ? `${l.slice(0, MAX_CHARS)}… (${l.length - MAX_CHARS} more characters)` : l;
}

// difference keeps a failed test's own lines: not the run's bookkeeping.
const bookkeeping = /^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (PASS|FAIL|SKIP)|PASS$|FAIL$|ok\s)/;

const out = [];
for (const [pkg, action] of pkgAction) {
  if (action === 'fail' && ![...tests.values()].some((t) => t.pkg === pkg && t.action === 'fail')) {
    out.push(`package ${pkg} failed outside any test (did it build?):`);
    for (const l of (pkgOutput.get(pkg) ?? []).slice(0, MAX_LINES)) out.push('  ' + shown(l));
  }
}
for (const kind of kinds) {
  const count = { pass: 0, fail: 0, skip: 0, missing: 0 };
  const diffs = [];
  for (const name of kind.tests) {
    const t = tests.get(name);
    if (!t || !t.action) {
      count.missing++;
      continue;
    }
    count[t.action]++;
    if (t.action === 'fail') {
      const lines = t.output.filter((l) => !bookkeeping.test(l)).map(shown);
      diffs.push({ name, lines });
    }
    if (t.action === 'skip') {
      const why = t.output.filter((l) => !bookkeeping.test(l)).map((l) => l.trim()).join(' ');
      diffs.push({ name, lines: [`(skipped) ${why}`] });
    }
  }
  const total = kind.tests.length;
  out.push(
    `${kind.name}: ${count.pass} of ${total} tests found every answer identical, ${count.fail} found differences` +
      (count.skip ? `, ${count.skip} skipped` : '') +
      (count.missing ? `, ${count.missing} did not run` : ''),
  );
  let budget = MAX_LINES;
  for (const d of diffs) {
    if (budget <= 0) {
      out.push(`  … (more in the go test -json file)`);
      break;
    }
    const n = Math.min(budget, PER_TEST, d.lines.length);
    out.push(`  ${d.name}:`);
    for (const l of d.lines.slice(0, n)) out.push('  ' + l);
    if (n < d.lines.length) out.push(`      … (${d.lines.length - n} more lines)`);
    budget -= n;
  }
}
process.stdout.write(out.join('\n') + '\n');
