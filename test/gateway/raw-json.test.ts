// shared/raw-json.ts: a RawJson's text goes into the gateway's answer as it is, and anywhere else
// (JSON.stringify of a stored answer, a webhook) as its parsed value: the same JSON either way.
import t from 'tap';
import { encodeParts, RawJson } from '../../shared/raw-json.ts';

/** The answer's JSON as text, from its parts. */
const stringify = (v: unknown) => {
  const p = encodeParts(v);
  return typeof p === 'string' ? p : Buffer.concat(p).toString('utf8');
};

t.test('the answer puts the text in; JSON.stringify gives the same JSON', async (t) => {
  const value = {
    a: 1,
    results: new RawJson('[{"page":"https://e.test/?q=\\"x\\"","n":null},2]'),
    more: [new RawJson('"s"'), new RawJson('{}')],
    // a string that looks like the mark's start is only a string
    s: '\u0000raw0123:0',
  };
  const text = stringify(value);
  t.equal(text, JSON.stringify(value));
  t.same(JSON.parse(text), { a: 1, results: [{ page: 'https://e.test/?q="x"', n: null }, 2], more: ['s', {}], s: '\u0000raw0123:0' });
  t.equal(stringify({ plain: [1, 'two'] }), '{"plain":[1,"two"]}', 'no RawJson: JSON.stringify');
});

t.test('a RawJson serialised inside another stringify call (a nested toJSON) is still right', async (t) => {
  const inner = { toJSON: () => JSON.parse(stringify({ r: new RawJson('[1]') })) };
  t.equal(stringify({ x: inner, y: new RawJson('true') }), '{"x":{"r":[1]},"y":true}');
});

t.test('encodeParts: the same JSON as bytes in parts, each RawJson its own bytes (made once)', async (t) => {
  const results = new RawJson('[{"title":"Zürich – 東京 😀"},{"n":1}]');
  const value = { job: { id: 'j', results, title: 'ä' }, balance: 5, tail: new RawJson('"x"') };
  const parts = encodeParts(value);
  t.ok(Array.isArray(parts), 'parts when the value holds a RawJson');
  const bytes = Buffer.concat(parts as Uint8Array[]);
  t.equal(bytes.toString('utf8'), JSON.stringify(value), 'byte for byte the JSON of the parsed values');
  t.ok((parts as Uint8Array[]).includes(results.bytes), "the RawJson's own bytes, not a copy");
  t.equal(results.bytes, results.bytes, 'made once per RawJson');
  t.equal(encodeParts({ plain: [1, 'ä'] }), '{"plain":[1,"ä"]}', 'no RawJson: one string, as JSON.stringify');
});
