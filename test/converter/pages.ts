// Fixture pages served on 127.0.0.1 by the converter tests and the benchmark.

const para = (n: number, words = 60) =>
  Array.from(
    { length: n },
    (_, i) =>
      `<p>Paragraph ${i + 1}. ${'The quick brown fox jumps over the lazy dog while the careful reader follows every line. '.repeat(Math.ceil(words / 16))}</p>`,
  ).join('\n');

export const ARTICLE = `<!doctype html>
<html lang="en-GB">
<head>
<meta charset="utf-8">
<title>Tides of the North Sea | Coastal Notes</title>
<base href="/blog/2024/">
<meta name="description" content="How the tides of the North Sea work, with tables and code.">
<meta name="author" content="Ada Lovelace">
<meta name="keywords" content="tides, sea, moon">
<meta name="robots" content="index, follow">
<meta property="og:title" content="Tides of the North Sea">
<meta property="og:type" content="article">
<meta property="og:site_name" content="Coastal Notes">
<meta property="og:image" content="images/lead.jpg">
<meta property="og:locale" content="en_GB">
<meta property="article:published_time" content="2024-03-01T08:00:00Z">
<meta property="article:modified_time" content="2024-03-05T10:30:00Z">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:site" content="@coastal">
<link rel="canonical" href="/blog/tides">
<link rel="icon" href="/static/icon.png">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","headline":"Tides of the North Sea","author":{"@type":"Person","name":"Ada Lovelace"},"datePublished":"2024-03-01T08:00:00Z"}</script>
<script>window.tracking = 1</script>
</head>
<body>
<header><nav><a href="/">Home</a> <a href="/about">About</a> <a href="https://twitter.com/coastal">Twitter</a></nav></header>
<main>
<article>
<h1>Tides of the North Sea</h1>
<p class="byline">By <span rel="author">Ada Lovelace</span>, <time datetime="2024-03-01T08:00:00Z">1 March 2024</time></p>
${para(4)}
<h2>Tide tables</h2>
<table>
<thead><tr><th>Port</th><th>High water</th><th>Range (m)</th></tr></thead>
<tbody><tr><td>Hamburg</td><td>06:12</td><td>3.6</td></tr><tr><td>Rotterdam</td><td>04:40</td><td>1.9</td></tr></tbody>
</table>
<h2>Computing the tide</h2>
<p>A <a href="tides/model.html">relative link</a>, a <a href="/root-link">root link</a>, an <a href="https://example.org/x">external link</a> and a <a href="javascript:alert(1)" onclick="steal()">bad link</a>.</p>
<pre><code class="language-python">def tide(t):
    return 1.2 * math.sin(t / 12.42)
</code></pre>
<div class="highlight highlight-source-rust"><pre>fn main() { println!("ebb"); }</pre></div>
<p>This is <del>wrong</del> right.</p>
<ul><li><input type="checkbox" checked> measured</li><li><input type="checkbox"> modelled</li></ul>
<p><img src="images/chart.png" alt="Tide chart"> <img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==" alt="inline blob"> <img src="https://pixel.tracker.example/p.gif" width="1" height="1" alt=""></p>
<iframe src="https://ads.example/frame"></iframe>
<form action="/subscribe"><input name="email"><button>Go</button></form>
${para(4)}
<h3>Further reading</h3>
<p>See <a href="../2023/older.html">last year's note</a>.</p>
</article>
</main>
<aside><h2>Related</h2><a href="/other">Other</a></aside>
<footer><p>© Coastal Notes</p></footer>
</body>
</html>`;

export const SPA_SHELL = `<!doctype html><html><head><title>App</title><script type="module" src="/app.js"></script></head>
<body><div id="root"></div><noscript>You need to enable JavaScript to run this app.</noscript></body></html>`;

export const SPA_SCRIPT = `document.getElementById('root').innerHTML = '<article><h1>Rendered heading</h1>' + '<p>This content exists only after JavaScript ran in a browser. '.repeat(12) + '</p></article>';`;

/** No article: a link hub. Readability gives up; the fallback keeps the body minus navigation. */
export const HUB = `<!doctype html><html><head><title>Hub</title></head><body>
<nav><a href="/a">NAVLINK</a></nav>
<div><h2>Links</h2><ul><li><a href="/one">One</a></li><li><a href="/two">Two</a></li></ul><p>Short text.</p></div>
<footer>FOOTERTEXT</footer></body></html>`;

export const LATIN1_TEXT = 'Grüße aus Köln: Straße, Öl, Ärger. ' + 'Français: déjà vu, garçon, naïve. '.repeat(10);
export const latin1Page = () =>
  Buffer.from(
    `<!doctype html><html><head><title>Grüße</title></head><body><article><h1>Grüße</h1><p>${LATIN1_TEXT}</p><p>${LATIN1_TEXT}</p></article></body></html>`,
    'latin1',
  );
export const CYRILLIC = 'Привет, мир! Это проверка кодировки страницы. '.repeat(8);

/** A set of pages for the benchmark: different sizes and shapes. */
export function benchPages(): string[] {
  return [
    ARTICLE,
    HUB,
    `<!doctype html><html><head><title>Long</title></head><body><article><h1>Long read</h1>${para(80)}</article></body></html>`,
    `<!doctype html><html><head><title>Short</title></head><body><main><h1>Short</h1>${para(3)}</main></body></html>`,
  ];
}
