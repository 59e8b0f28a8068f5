// The one link and image extractor (actors/converter/links.ts): absolute http(s) URLs, fragments
// dropped, each URL once, `internal` by the page's origin (not a <base> elsewhere), document order.
import t from 'tap';
import { JSDOM } from 'jsdom';
import { extractImages, extractLinks } from '../../actors/converter/links.ts';

const doc = (html: string) => new JSDOM(html).window.document as unknown as Document;

t.test('links', async (t) => {
  const d = doc(`<a href="/a#x">A</a><map><area href="b.html" alt="Bee"></map><a href="/a">A again</a>
<a href="https://Other.example/p?q=1#f"> Other
  site </a><a href="mailto:x@y.z">mail</a><a href="javascript:alert(1)">js</a><a href="#top">top</a>
<a href="/img"><img src="i.png" alt="Pictured"></a><a href="http://[bad">bad</a><a>no href</a>`);
  t.same(extractLinks(d, 'https://site.example/dir/page'), [
    { url: 'https://site.example/a', text: 'A', internal: true },
    { url: 'https://site.example/dir/b.html', text: 'Bee', internal: true },
    { url: 'https://other.example/p?q=1', text: 'Other site', internal: false },
    { url: 'https://site.example/img', text: 'Pictured', internal: true },
  ]);
  t.same(
    extractLinks(doc('<a href="x">X</a>'), 'https://cdn.example/base/', 'https://site.example/page'),
    [{ url: 'https://cdn.example/base/x', text: 'X', internal: false }],
    'resolved against the base, judged by the page',
  );
  t.equal(extractLinks(doc(`<a href="/l">${'w '.repeat(400)}</a>`), 'https://s.example/')[0]!.text.length, 500, 'text bounded');
});

t.test('images', async (t) => {
  const d = doc(`<img src="/a.png" alt=" A "><img src="data:image/png;base64,AA" data-src="lazy.png" alt="L">
<img src="/a.png" alt="dup"><img src="https://cdn.example/c.jpg"><img>`);
  t.same(extractImages(d, 'https://site.example/p/'), [
    { url: 'https://site.example/a.png', alt: 'A', internal: true },
    { url: 'https://site.example/p/lazy.png', alt: 'L', internal: true },
    { url: 'https://cdn.example/c.jpg', alt: '', internal: false },
  ]);
});
