// The main content as each output: Markdown (turndown), plain text, sanitised HTML (DOMPurify).
import createDOMPurify from 'dompurify';
import { markdownOf } from '../markdown.ts';
import { htmlDocument } from '../html-document.ts';
import { tasks } from './prepare.ts';
import { isTrackingPixel } from './content.ts';
import { threadWindow } from './parse.ts';

export function toMarkdown(root: Element, title: string | null): string {
  let md = markdownOf(root).trim();
  md = tasks(md.replace(/\n{3,}/g, '\n\n'), '[x]', '[ ]');
  return `${title ? `# ${title.replace(/\n/g, ' ')}\n\n` : ''}${md}\n`;
}

const BLOCK = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'DETAILS',
  'DIV',
  'DL',
  'DD',
  'DT',
  'FIELDSET',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'LI',
  'MAIN',
  'NAV',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'TR',
  'UL',
  'BODY',
]);

/** Plain text with paragraphs kept: blocks are separated by a blank line, list items start with "- ". */
export function toText(root: Element, title: string | null): string {
  const parts: string[] = [];
  let cur = '';
  const flush = () => {
    const v = cur
      .replace(/[ \t]+\n/g, '\n')
      .replace(/[ \t]{2,}/g, ' ')
      .trim();
    if (v) parts.push(v);
    cur = '';
  };
  const walk = (n: Node, pre: boolean) => {
    if (n.nodeType === 3) {
      cur += pre ? n.textContent : (n.textContent ?? '').replace(/\s+/g, ' ');
      return;
    }
    if (n.nodeType !== 1) return;
    const el = n as Element;
    const tag = el.tagName;
    if (tag === 'BR') {
      cur += '\n';
      return;
    }
    if (tag === 'IMG') return;
    if (tag === 'PRE') {
      flush();
      const code = (el.textContent ?? '').replace(/\s+$/, '');
      if (code) parts.push(code);
      return;
    }
    if (tag === 'TABLE') {
      flush();
      const rows = [...el.querySelectorAll('tr')]
        .map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').replace(/\s+/g, ' ').trim()).join('\t'))
        .filter(Boolean);
      if (rows.length) parts.push(rows.join('\n'));
      return;
    }
    const block = BLOCK.has(tag);
    if (block) flush();
    if (tag === 'LI') cur += '- ';
    if (tag === 'TD' || tag === 'TH') cur += cur && !cur.endsWith('\t') ? '\t' : '';
    for (const c of el.childNodes) walk(c, pre || tag === 'PRE');
    if (block) flush();
  };
  walk(root, false);
  flush();
  if (title && parts[0] !== title) parts.unshift(title);
  return tasks(`${parts.join('\n\n')}\n`, '[x]', '[ ]');
}

let purifier: ReturnType<typeof createDOMPurify> | null = null;
function getPurifier() {
  if (purifier) return purifier;
  const purify = createDOMPurify(threadWindow() as never);
  purify.addHook('uponSanitizeElement', (node, data) => {
    if (data.tagName === 'img' && isTrackingPixel(node as Element)) node.parentNode?.removeChild(node);
  });
  // the only class kept is a code block's language
  purify.addHook('uponSanitizeAttribute', (_node, data) => {
    if (data.attrName === 'class' && !/^language-[a-z0-9+#_-]+$/i.test(data.attrValue)) data.keepAttr = false;
  });
  purify.addHook('afterSanitizeAttributes', (node) => {
    const el = node as Element;
    for (const attr of ['href', 'src']) {
      const v = el.getAttribute?.(attr);
      if (v && !/^(https?:|mailto:|#)/i.test(v)) el.removeAttribute(attr);
    }
    if (el.tagName === 'A' && el.getAttribute('href')) el.setAttribute('rel', 'noopener noreferrer nofollow');
  });
  purifier = purify;
  return purify;
}

export function sanitize(root: Element, title: string | null, lang: string | null): string {
  const purify = getPurifier();
  const clean = purify.sanitize(tasks(root.innerHTML, '☑ ', '☐ '), {
    FORBID_TAGS: [
      'iframe',
      'frame',
      'frameset',
      'object',
      'embed',
      'form',
      'input',
      'button',
      'select',
      'textarea',
      'option',
      'style',
      'link',
      'meta',
      'base',
      'script',
      'noscript',
      'template',
      'svg',
      'math',
      'dialog',
      'portal',
    ],
    FORBID_ATTR: ['style', 'srcset', 'ping', 'action', 'formaction', 'background', 'poster', 'id'],
    ALLOW_DATA_ATTR: false,
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  }) as string;
  return htmlDocument(title, lang, clean);
}
