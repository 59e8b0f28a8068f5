// Page keys (contract section 2): readable, unique in a job, safe as zip file names.
import t from 'tap';
import { MAX_KEY, PageKeys, clashKey, pageKeyOf, resultKey, zipName } from '../../shared/crawl/keys.ts';

t.test('the contract examples', async (t) => {
  t.equal(pageKeyOf('https://example.com/'), 'index');
  t.equal(pageKeyOf('https://example.com'), 'index');
  t.equal(pageKeyOf('https://example.com/docs/intro.html'), 'docs/intro');
  t.equal(pageKeyOf('https://example.com/docs/intro'), 'docs/intro');
  t.equal(pageKeyOf('https://example.com/docs/'), 'docs', 'trailing slash folded');
  t.match(pageKeyOf('https://example.com/search?q=x'), /^search-[0-9a-f]{6}$/);
  t.not(pageKeyOf('https://example.com/search?q=x'), pageKeyOf('https://example.com/search?q=y'), 'queries apart');
  t.equal(pageKeyOf('https://example.com/search?q=x'), pageKeyOf('https://example.com/search?q=x#frag'), 'fragment ignored');
  t.match(pageKeyOf('https://example.com/?page=2'), /^index-[0-9a-f]{6}$/);
  t.equal(pageKeyOf('https://example.com/docs/intro', { hostPrefix: true }), 'example.com/docs/intro');
  t.equal(pageKeyOf('http://127.0.0.1:8080/', { hostPrefix: true }), '127.0.0.1_8080/index');
  t.equal(pageKeyOf('http://[::1]:8080/a', { hostPrefix: true }), '__1_8080/a');
  t.equal(pageKeyOf('https://bücher.de/a', { hostPrefix: true }), 'bücher.de/a', 'IDN hosts read in unicode');
});

t.test('awkward paths', async (t) => {
  t.equal(pageKeyOf('https://example.com//a///b//'), 'a/b', 'empty segments dropped');
  t.equal(pageKeyOf('https://example.com/a/./b/../c'), 'a/c', 'dot segments resolved by the URL parser');
  t.equal(pageKeyOf('https://example.com/a/%2e%2e/b'), 'b', 'encoded dot-dot resolved by the URL parser too');
  t.equal(pageKeyOf('https://example.com/a/.../b'), 'a/___/b', 'a segment of dots never reaches the zip');
  t.equal(pageKeyOf('https://example.com/a%2F..%2F..%2Fetc/passwd'), 'a_______etc/passwd', 'decoded slashes are not separators');
  t.equal(pageKeyOf('https://example.com/x/a%2F..%2Fb'), 'x/a_.._b');
  t.equal(pageKeyOf('https://example.com/x/..%2F..'), 'x/.._', 'trailing dots go (Windows)');
  t.equal(pageKeyOf('https://example.com/x/..'), 'index', 'a real .. is resolved by the URL parser');
  t.equal(pageKeyOf('https://example.com/caf%C3%A9/%E6%97%A5%E6%9C%AC'), 'café/日本', 'unicode decoded and readable');
  t.equal(pageKeyOf('https://example.com/cafe%CC%81'), 'café', 'NFC');
  t.equal(pageKeyOf('https://example.com/bad%FFbyte'), 'bad%FFbyte', 'invalid UTF-8 kept as spelled');
  t.equal(pageKeyOf('https://example.com/a%20b%09c'), 'a-b-c', 'whitespace');
  t.equal(pageKeyOf('https://example.com/x:y*z%3F%22%3C%3E%7C'), 'x_y_z_____');
  t.equal(pageKeyOf('https://example.com/con'), 'con_', 'windows device name');
  t.equal(pageKeyOf('https://example.com/nul.txt'), 'nul.txt_');
  t.equal(pageKeyOf('https://example.com/v1.2/guide.md'), 'v1_2/guide.md', 'directory dots never spell a file');
  t.equal(pageKeyOf('https://example.com/a./b'), 'a_/b');
  t.equal(pageKeyOf('https://example.com/index.php'), 'index');
  t.equal(pageKeyOf('https://example.com/.html'), 'index');
  t.equal(pageKeyOf('https://example.com/%00x'), '_x', 'control characters');
});

t.test('long paths are bounded and stay apart', async (t) => {
  const seg = 'a'.repeat(300);
  const k1 = pageKeyOf(`https://example.com/${seg}`);
  t.ok(k1.length <= 60, 'one segment bounded');
  const deep = Array.from({ length: 80 }, (_, i) => `segment${i}`).join('/');
  const a = pageKeyOf(`https://example.com/${deep}/one`);
  const b = pageKeyOf(`https://example.com/${deep}/two`);
  t.ok(Array.from(a).length <= MAX_KEY, `key bounded (${a.length})`);
  t.not(a, b, 'a shared long prefix does not merge two pages');
  t.match(a, /^segment0\/segment1\//, 'still readable');
  const uni = pageKeyOf(`https://example.com/${'日'.repeat(500)}`);
  t.ok(Array.from(uni).length <= 60);
  t.notMatch(uni, /\uFFFD/, 'no broken characters');
  const emoji = pageKeyOf(`https://example.com/${'😀'.repeat(500)}`);
  t.ok(!/[\uD800-\uDBFF]$/.test(emoji), 'never cut between surrogates');
});

t.test('PageKeys hands out unique keys', async (t) => {
  const keys = new PageKeys();
  t.equal(keys.take('https://example.com/'), 'index');
  t.equal(keys.take('https://example.com/index.html'), 'index~2');
  t.equal(keys.take('https://example.com/index.htm'), 'index~3');
  t.equal(keys.take('https://example.com/About'), 'About');
  t.equal(keys.take('https://example.com/about'), 'about~2', 'case-insensitive clash (macOS, Windows zips)');
  t.equal(keys.take('https://example.com/a~2'), 'a~2');
  t.equal(keys.take('https://example.com/a'), 'a');
  t.equal(keys.take('https://example.com/a.html'), 'a~3', 'skips a spelling taken by a real path');
  t.equal(keys.size, 8);
  const resumed = new PageKeys();
  resumed.reserve('index');
  t.equal(resumed.take('https://example.com/'), 'index~2', 'reserved keys count');
  t.equal(clashKey('x', 1), 'x');
  t.equal(clashKey('x', 5), 'x~5');
});

t.test('result keys and zip names', async (t) => {
  t.equal(resultKey('docs/intro', 'markdown'), 'docs/intro/markdown');
  t.equal(zipName('docs/intro', 'md'), 'docs/intro.md');
  t.equal(zipName('index', '.pdf'), 'index.pdf');
  // no zip name is both a file and a directory: directory segments carry no dot
  const keys = new PageKeys();
  const names = ['https://e.com/a', 'https://e.com/a.md/x', 'https://e.com/a.md'].map((u) => zipName(keys.take(u), 'md'));
  const dirs = new Set(
    names.flatMap((n) =>
      n
        .split('/')
        .slice(0, -1)
        .map((_, i, a) => a.slice(0, i + 1).join('/')),
    ),
  );
  for (const n of names) t.notOk(dirs.has(n), `${n} is not also a directory`);
});
