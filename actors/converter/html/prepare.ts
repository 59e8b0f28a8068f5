// What must survive Readability, put where it survives: absolute links, a code block's language
// as its one kept class, and task-list boxes as marker characters (restored per output by tasks()).
import { attrIs, firstDescendant, hasAncestorNamed, named } from '../elements.ts';
import { absolutize } from './links.ts';
import type { ParsedPage } from './parse.ts';

/** Absolute URLs, code-block languages and task-list boxes made to survive Readability; returns the classes to keep. */
export function prepareDoc(page: ParsedPage): string[] {
  const { doc } = page;
  absolutize(page);
  const keep = markCodeLanguages(page);
  // Readability drops <input>: keep task-list boxes as marker characters, restored per output
  // (`li input[type="checkbox" i]`)
  for (const box of named(page, 'input')) {
    if (attrIs(box, 'type', 'checkbox') && hasAncestorNamed(box, LI))
      box.replaceWith(doc.createTextNode(box.hasAttribute('checked') ? `${TASK_DONE} ` : `${TASK_OPEN} `));
  }
  return keep;
}
const LI = new Set(['li']);

const TASK_DONE = '\uE000';
const TASK_OPEN = '\uE001';
export const tasks = (s: string, done: string, open: string) => s.replaceAll(TASK_DONE, done).replaceAll(TASK_OPEN, open);

const CODE_LANG = /(?:^|\s)(?:language|lang|highlight-source|brush:?)-?([a-z0-9+#_-]+)/i;

/** Put a code block's language on its <code> as `language-x`, the one class Readability is told to keep. */
function markCodeLanguages(page: ParsedPage): string[] {
  const { doc } = page;
  const classes = new Set<string>();
  for (const pre of named(page, 'pre')) {
    const code = firstDescendant(pre, (e) => e.localName === 'code');
    const from = [
      code?.getAttribute('class'),
      pre.getAttribute('class'),
      pre.parentElement?.getAttribute('class'),
      code?.getAttribute('data-lang'),
      pre.getAttribute('data-lang'),
      pre.getAttribute('data-language'),
    ];
    let lang: string | null = null;
    for (const c of from) {
      if (!c) continue;
      const m = CODE_LANG.exec(c);
      if (m) {
        lang = m[1]!.toLowerCase();
        break;
      }
      if (c === code?.getAttribute('data-lang') || c === pre.getAttribute('data-lang') || c === pre.getAttribute('data-language')) {
        lang = c.toLowerCase();
        break;
      }
    }
    if (!lang) continue;
    let target = code;
    if (!target) {
      // turndown fences only <pre><code>: give a bare <pre> its <code>
      target = doc.createElement('code');
      while (pre.firstChild) target.appendChild(pre.firstChild);
      pre.appendChild(target);
    }
    const cls = `language-${lang}`;
    target.setAttribute('class', cls);
    classes.add(cls);
  }
  return [...classes];
}
