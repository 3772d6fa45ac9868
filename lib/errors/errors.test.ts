import t from 'tap';
import { readFileSync } from 'node:fs';
import { ERRORS, ErrorCode, CniCode, NodenetError, asNodenetError, NetnsNotFoundError, TryAgainLaterError, InvalidObjectError } from './errors.js';

/** The rows of docs/errors.md's table: code → [CNI code, HTTP status, Status reason]. */
function documented(): Map<string, [number, number, string]> {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map<string, [number, number, string]>();
  for (const line of doc.split('\n')) {
    const m = /^\| `(NN_ERR_[A-Z_]+)` \| (\d+) \| (\d+) \| (\w+) \|/.exec(line);
    if (m) rows.set(m[1]!, [Number(m[2]), Number(m[3]), m[4]!]);
  }
  return rows;
}

t.test('docs/errors.md and the registry have the same codes, CNI codes, HTTP statuses and Status reasons', async (t) => {
  const doc = documented();
  t.ok(doc.size > 10, 'the table was read');
  for (const [code, row] of Object.entries(ERRORS)) {
    t.same(doc.get(code), [row.cni, row.http, row.reason], `${code}: documented as CNI ${row.cni}, HTTP ${row.http}, ${row.reason}`);
  }
  for (const code of doc.keys()) t.ok(code in ERRORS, `${code} (documented) is in the registry`);
});

t.test('every ErrorCode name points at a registry row, and every row has a name', async (t) => {
  const named = new Set<string>(Object.values(ErrorCode));
  for (const code of Object.keys(ERRORS)) t.ok(named.has(code), `${code} has a name`);
  t.equal(named.size, Object.keys(ERRORS).length);
});

t.test('the constructor takes the code only: CNI code and HTTP status come from the registry', async (t) => {
  const e = new NodenetError(ErrorCode.InvalidConfig, 'config mtu: must be an integer');
  t.equal(e.cniCode, CniCode.InvalidNetworkConfig);
  t.equal(e.httpStatus, 400);
  t.equal(new NodenetError(ErrorCode.NotAvailable, 'starting').cniCode, CniCode.PluginNotAvailable);
  t.equal(new InvalidObjectError('spec.ports[0].port', 'bad').httpStatus, 422);
  t.equal(new InvalidObjectError('spec.ports[0].port', 'bad').details, 'spec.ports[0].port');
});

t.test('asNodenetError does not wrap twice and maps unknown errors to 999', async (t) => {
  const e = new NetnsNotFoundError('/var/run/netns/x');
  t.equal(asNodenetError(e), e);
  t.equal(e.cniCode, CniCode.UnknownContainer);
  const w = asNodenetError(new Error('boom'));
  t.equal(w.cniCode, 999);
  t.equal(w.code, ErrorCode.Internal);
  t.equal(w.message, 'boom');
  t.equal(new TryAgainLaterError('later').cniCode, 11);
  t.ok(new NodenetError(ErrorCode.Exec, 'x') instanceof Error);
});
