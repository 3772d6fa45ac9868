import t from 'tap';
import { readFileSync } from 'node:fs';
import { ErrorCode, CniCode, NodenetError, asNodenetError, NetnsNotFoundError, TryAgainLaterError } from './errors.js';

t.test('every error code is documented in docs/errors.md', async (t) => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  for (const code of Object.values(ErrorCode)) t.match(doc, `\`${code}\``, `${code} documented`);
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
