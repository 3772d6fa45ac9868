/**
 * Label and field selectors against k8s.io/apimachinery's pkg/labels and
 * pkg/fields: the grammar, whitespace, upstream's error messages (which
 * kube-apiserver returns as the 400's message), validation of keys and
 * values, metav1.LabelSelector conversion, and matching.
 */
import t from 'tap';
import {
  labelKeyProblem,
  labelSelectorRequirements,
  labelValueProblem,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from './selectors.js';

const KEY_RE = "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const NAME_MSG = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character ${KEY_RE}`;
const VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const sel = (s: string, labels: Record<string, string> | undefined) => matchesLabels(parseLabelSelector(s), labels);
function parseError(s: string): string {
  try {
    parseLabelSelector(s);
  } catch (e) {
    if (!(e instanceof SelectorError)) throw e;
    return e.message;
  }
  throw new Error(`${JSON.stringify(s)} parsed`);
}

t.test('the empty selector has no requirements and matches everything', async (t) => {
  t.strictSame(parseLabelSelector(''), []);
  t.strictSame(parseLabelSelector(' \t\n '), []);
  t.ok(sel('', undefined));
  t.ok(sel('', { a: 'b' }));
  t.ok(matchesLabels([], {}));
});

t.test('equality: =, == and != (which also matches a missing label)', async (t) => {
  t.strictSame(parseLabelSelector('app=web'), [{ key: 'app', op: '=', values: ['web'] }]);
  t.strictSame(parseLabelSelector('app==web'), [{ key: 'app', op: '=', values: ['web'] }]);
  t.strictSame(parseLabelSelector('app!=web'), [{ key: 'app', op: '!=', values: ['web'] }]);
  t.strictSame(parseLabelSelector('app='), [{ key: 'app', op: '=', values: [''] }], 'an empty value');
  t.ok(sel('app=web', { app: 'web', x: 'y' }));
  t.notOk(sel('app=web', { app: 'api' }));
  t.notOk(sel('app=web', {}));
  t.ok(sel('app==web', { app: 'web' }));
  t.ok(sel('app!=web', { app: 'api' }));
  t.ok(sel('app!=web', {}), '!= matches when the label is absent');
  t.notOk(sel('app!=web', { app: 'web' }));
  t.ok(sel('app=', { app: '' }));
  t.notOk(sel('app=', {}), 'an empty value still needs the label');
  t.ok(sel('app=web,tier=fe', { app: 'web', tier: 'fe' }), 'requirements are ANDed');
  t.notOk(sel('app=web,tier=fe', { app: 'web', tier: 'be' }));
});

t.test('set-based: in, notin, exists, !key', async (t) => {
  t.strictSame(parseLabelSelector('env in (prod, dev,prod)'), [{ key: 'env', op: 'in', values: ['dev', 'prod'] }], 'values are a sorted set');
  t.strictSame(parseLabelSelector('env notin (qa)'), [{ key: 'env', op: 'notin', values: ['qa'] }]);
  t.strictSame(parseLabelSelector('env'), [{ key: 'env', op: 'exists', values: [] }]);
  t.strictSame(parseLabelSelector('!env'), [{ key: 'env', op: '!', values: [] }]);
  t.strictSame(parseLabelSelector('env in ()'), [{ key: 'env', op: 'in', values: [''] }], '"()" is the empty value');
  t.strictSame(parseLabelSelector('env in (,a)'), [{ key: 'env', op: 'in', values: ['', 'a'] }]);
  t.strictSame(parseLabelSelector('env in (a,)'), [{ key: 'env', op: 'in', values: ['', 'a'] }]);
  t.strictSame(parseLabelSelector('env in(a)'), [{ key: 'env', op: 'in', values: ['a'] }], 'no space needed before "("');
  t.ok(sel('env in (prod,dev)', { env: 'dev' }));
  t.notOk(sel('env in (prod,dev)', { env: 'qa' }));
  t.notOk(sel('env in (prod,dev)', {}), 'in needs the label');
  t.ok(sel('env notin (prod)', {}), 'notin matches when the label is absent');
  t.ok(sel('env notin (prod)', { env: 'dev' }));
  t.notOk(sel('env notin (prod)', { env: 'prod' }));
  t.ok(sel('env', { env: '' }));
  t.notOk(sel('env', { other: 'x' }));
  t.ok(sel('!env', { other: 'x' }));
  t.notOk(sel('!env', { env: 'x' }));
  t.notOk(sel('constructor', {}), 'only own labels exist');
  t.ok(sel('!toString', {}));
});

t.test('gt and lt compare integers (int64), not strings', async (t) => {
  t.strictSame(parseLabelSelector('n>5,m<10'), [{ key: 'n', op: 'gt', values: ['5'] }, { key: 'm', op: 'lt', values: ['10'] }]);
  t.ok(sel('n>9', { n: '10' }));
  t.notOk(sel('n>10', { n: '10' }));
  t.ok(sel('n<10', { n: '9' }));
  t.notOk(sel('n<10', { n: '10' }));
  t.notOk(sel('n>1', { n: 'abc' }), 'a label that is not an integer does not match');
  t.notOk(sel('n>1', {}), 'nor does a missing one');
  t.ok(sel('n>9007199254740992', { n: '9007199254740993' }), 'beyond 2^53, exactly');
  t.notOk(sel('n>1', { n: '99999999999999999999' }), 'beyond int64 does not parse');
  t.match(parseError('n>abc'), /^unable to parse requirement: values\[0\]: Invalid value: "abc": for 'Gt', 'Lt' operators, the value must be an integer$/);
  t.equal(parseError('n>'), `unable to parse requirement: values[0]: Invalid value: "": for 'Gt', 'Lt' operators, the value must be an integer`);
  t.equal(parseError('n>-1'), `unable to parse requirement: values[0][n]: Invalid value: "-1": ${VALUE_MSG}`, '-1 is not a label value');
});

t.test('whitespace: spaces, tabs, CR and LF around every token', async (t) => {
  t.strictSame(parseLabelSelector(' a = b ,\tc\n!=\rd , e in ( x , y ) ,  ! f '), [
    { key: 'a', op: '=', values: ['b'] },
    { key: 'c', op: '!=', values: ['d'] },
    { key: 'e', op: 'in', values: ['x', 'y'] },
    { key: 'f', op: '!', values: [] },
  ]);
});

t.test('keys: prefixes, and "in"/"notin" as names and values', async (t) => {
  t.strictSame(parseLabelSelector('app.kubernetes.io/name=web'), [{ key: 'app.kubernetes.io/name', op: '=', values: ['web'] }]);
  t.strictSame(parseLabelSelector('in in (notin)'), [{ key: 'in', op: 'in', values: ['notin'] }]);
  t.strictSame(parseLabelSelector('a=in'), [{ key: 'a', op: '=', values: ['in'] }]);
  t.ok(sel('app.kubernetes.io/name=web', { 'app.kubernetes.io/name': 'web' }));
});

t.test('syntax errors carry upstream messages', async (t) => {
  t.equal(parseError('a b'), 'unable to parse requirement: found \'b\', expected: in, notin, =, ==, !=, gt, lt');
  t.equal(parseError('a=b c'), "found 'c', expected: ',' or 'end of string'");
  t.equal(parseError('a,'), "found '', expected: identifier after ','");
  t.equal(parseError('a,,b'), "found ',', expected: identifier after ','");
  t.equal(parseError(',a'), "found ',', expected: !, identifier, or 'end of string'");
  t.equal(parseError('=a'), "found '=', expected: !, identifier, or 'end of string'");
  t.equal(parseError('a in b'), "unable to parse requirement: found 'b' expected: '('");
  t.equal(parseError('a in'), "unable to parse requirement: found '' expected: '('");
  t.equal(parseError('a in (b'), "unable to parse requirement: found '', expected: ',' or ')'");
  t.equal(parseError('a in (b c)'), "unable to parse requirement: found 'c', expected: ',' or ')'");
  t.equal(parseError('a in (=)'), "unable to parse requirement: found '=', expected: ',', ')' or identifier");
  t.equal(parseError('a=(b)'), "unable to parse requirement: found '(', expected: identifier");
  t.equal(parseError('!'), "unable to parse requirement: found '', expected: identifier");
  t.equal(parseError('!a=b'), "found '=', expected: ',' or 'end of string'");
  t.throws(() => parseLabelSelector('a b'), SelectorError);
});

t.test('invalid keys and values: upstream validation messages', async (t) => {
  t.equal(parseError('Foo_=x'), `unable to parse requirement: <nil>: Invalid value: "Foo_": ${NAME_MSG}`);
  t.equal(parseError('a=b_'), `unable to parse requirement: values[0][a]: Invalid value: "b_": ${VALUE_MSG}`);
  t.equal(parseError(`a=${'x'.repeat(64)}`), `unable to parse requirement: values[0][a]: Invalid value: "${'x'.repeat(64)}": must be no more than 63 characters`);
  t.equal(
    parseError('a in (x-, _y)'),
    `unable to parse requirement: [values[0][a]: Invalid value: "_y": ${VALUE_MSG}, values[1][a]: Invalid value: "x-": ${VALUE_MSG}]`,
    'several problems aggregate, indexed in sorted order',
  );
  t.match(parseError('Example.com/a'), /^unable to parse requirement: <nil>: Invalid value: "Example.com\/a": prefix part a lowercase RFC 1123 subdomain must consist of/);
  t.match(parseError('a/b/c'), /Invalid value: "a\/b\/c": a qualified name must consist of .* with an optional DNS subdomain prefix and '\/' \(e.g. 'example.com\/MyName'\)$/);
});

t.test('labelKeyProblem and labelValueProblem: IsQualifiedName and IsValidLabelValue', async (t) => {
  t.equal(labelKeyProblem('app'), null);
  t.equal(labelKeyProblem('example.com/app-1.x_y'), null);
  t.equal(labelKeyProblem('a'.repeat(63)), null);
  t.equal(labelKeyProblem('a'.repeat(64)), 'name part must be no more than 63 characters');
  t.equal(labelKeyProblem('/a'), 'prefix part must be non-empty');
  t.equal(labelKeyProblem('a/'), `name part must be non-empty; ${NAME_MSG}`);
  t.equal(labelKeyProblem(''), `name part must be non-empty; ${NAME_MSG}`);
  t.equal(labelKeyProblem('-a'), NAME_MSG);
  t.match(labelKeyProblem(`${'a'.repeat(254)}/x`), /^prefix part must be no more than 253 characters$/);
  t.equal(labelValueProblem(''), null, 'a value may be empty');
  t.equal(labelValueProblem('v1.2_3-x'), null);
  t.equal(labelValueProblem('a b'), VALUE_MSG);
  t.equal(labelValueProblem('-'.repeat(64)), `must be no more than 63 characters; ${VALUE_MSG}`);
});

t.test('labelSelectorRequirements: matchLabels and matchExpressions, as LabelSelectorAsSelector', async (t) => {
  const reqs = labelSelectorRequirements({
    matchLabels: { app: 'web' },
    matchExpressions: [
      { key: 'env', operator: 'In', values: ['prod', 'stage'] },
      { key: 'tier', operator: 'NotIn', values: ['db'] },
      { key: 'team', operator: 'Exists' },
      { key: 'legacy', operator: 'DoesNotExist', values: [] },
    ],
  });
  t.strictSame(reqs, [
    { key: 'app', op: '=', values: ['web'] },
    { key: 'env', op: 'in', values: ['prod', 'stage'] },
    { key: 'tier', op: 'notin', values: ['db'] },
    { key: 'team', op: 'exists', values: [] },
    { key: 'legacy', op: '!', values: [] },
  ]);
  t.ok(matchesLabels(reqs, { app: 'web', env: 'prod', team: 'x' }));
  t.notOk(matchesLabels(reqs, { app: 'web', env: 'prod', team: 'x', legacy: 'y' }));
  t.notOk(matchesLabels(reqs, { app: 'web', env: 'prod', team: 'x', tier: 'db' }));
  t.notOk(matchesLabels(reqs, { app: 'web', env: 'prod' }));
  t.strictSame(labelSelectorRequirements({}), [], 'an empty selector selects everything');
  t.ok(matchesLabels(labelSelectorRequirements({ matchLabels: {}, matchExpressions: [] }), { any: 'thing' }));

  t.throws(() => labelSelectorRequirements({ matchExpressions: [{ key: 'a', operator: 'Equals', values: ['x'] }] }), { name: 'SelectorError', message: '"Equals" is not a valid label selector operator' });
  t.throws(() => labelSelectorRequirements({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }), {
    message: "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
  });
  t.throws(() => labelSelectorRequirements({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }), {
    message: 'values: Invalid value: ["x"]: values set must be empty for exists and does not exist',
  });
  t.throws(() => labelSelectorRequirements({ matchLabels: { 'bad key': 'x' } }), { message: `key: Invalid value: "bad key": ${NAME_MSG}` });
  t.throws(() => labelSelectorRequirements({ matchLabels: { app: 'a b' } }), { message: `values[0][app]: Invalid value: "a b": ${VALUE_MSG}` });
});

t.test('field selectors: =, ==, != on the supported fields', async (t) => {
  const supported = ['metadata.name', 'metadata.namespace', 'spec.nodeName'];
  t.strictSame(parseFieldSelector('metadata.name=x', supported), [{ field: 'metadata.name', op: '=', value: 'x' }]);
  t.strictSame(parseFieldSelector('metadata.name==x', supported), [{ field: 'metadata.name', op: '=', value: 'x' }]);
  t.strictSame(parseFieldSelector('spec.nodeName!=n1,metadata.namespace=default', supported), [
    { field: 'metadata.namespace', op: '=', value: 'default' },
    { field: 'spec.nodeName', op: '!=', value: 'n1' },
  ]);
  t.strictSame(parseFieldSelector('', supported), [], 'the empty selector');
  t.strictSame(parseFieldSelector('metadata.name=x,', supported), [{ field: 'metadata.name', op: '=', value: 'x' }], 'empty terms are skipped');
  t.strictSame(parseFieldSelector('spec.nodeName=', supported), [{ field: 'spec.nodeName', op: '=', value: '' }]);
  t.strictSame(parseFieldSelector('metadata.name=a!b', supported), [{ field: 'metadata.name', op: '=', value: 'a!b' }]);
});

t.test('field selectors: an unsupported field is kube-apiserver\'s "field label not supported"', async (t) => {
  t.throws(() => parseFieldSelector('spec.foo=x', ['metadata.name']), { name: 'SelectorError', message: 'field label not supported: spec.foo' });
  t.throws(() => parseFieldSelector('metadata.name = x', ['metadata.name']), { message: 'field label not supported: metadata.name ' }, 'the field is not trimmed');
  t.throws(() => parseFieldSelector('metadata.namespace=x', ['metadata.name']), { message: 'field label not supported: metadata.namespace' });
  t.throws(() => parseFieldSelector('spec.foo=x,bad', ['metadata.name']), { message: "invalid selector: 'spec.foo=x,bad'; can't understand 'bad'" }, 'syntax is checked before fields');
});

t.test('field selectors: escapes and syntax errors', async (t) => {
  const s = ['metadata.name'];
  t.strictSame(parseFieldSelector('metadata.name=a\\,b', s), [{ field: 'metadata.name', op: '=', value: 'a,b' }]);
  t.strictSame(parseFieldSelector('metadata.name=a\\=b\\\\c', s), [{ field: 'metadata.name', op: '=', value: 'a=b\\c' }]);
  t.throws(() => parseFieldSelector('metadata.name=a\\!b', s), { message: 'invalid field selector: invalid escape sequence: \\!' });
  t.throws(() => parseFieldSelector('metadata.name=a\\', s), { message: 'invalid field selector: invalid escape sequence: \\' });
  t.throws(() => parseFieldSelector('metadata.name=a=b', s), { message: 'invalid field selector: unescaped character in value: 61' });
  t.throws(() => parseFieldSelector('metadata.name', s), { message: "invalid selector: 'metadata.name'; can't understand 'metadata.name'" });
  t.throws(() => parseFieldSelector('metadata.name=x,nope', s), { message: "invalid selector: 'metadata.name=x,nope'; can't understand 'nope'" });
});

t.test('matchesFields: every requirement; a missing field is ""', async (t) => {
  const fields = { 'metadata.name': 'web', 'metadata.namespace': 'default', 'spec.nodeName': '' };
  const m = (sel: string) => matchesFields(parseFieldSelector(sel, ['metadata.name', 'metadata.namespace', 'spec.nodeName', 'status.podIP']), fields);
  t.ok(m('metadata.name=web'));
  t.notOk(m('metadata.name=api'));
  t.ok(m('metadata.name!=api'));
  t.notOk(m('metadata.name!=web'));
  t.ok(m('metadata.name=web,metadata.namespace=default'));
  t.notOk(m('metadata.name=web,metadata.namespace=kube-system'));
  t.ok(m('spec.nodeName='), 'an unscheduled pod has spec.nodeName ""');
  t.ok(m('status.podIP='), 'a field the object lacks is ""');
  t.notOk(m('status.podIP!='));
  t.ok(matchesFields([], {}), 'no requirements: everything');
});
