import { LRUCache } from 'lru-cache';
import { Parser } from 'htmlparser2';
import { compileOptions, handlebars, runtimeOptions, withLoopBudget } from './handlebarsEnvironment';
import { findLandmarks } from './htmlLandmarks';
import { htmlToText } from './htmlToText';
import { unsubscribeFooter } from './unsubscribeFooter';

/**
 * The text part of a template's emails made once per template instead of once per recipient. The
 * template's Handlebars source has each `{{expression}}` replaced by a marker (private-use
 * characters around lower-case letters naming its index), the marked HTML goes through
 * html-to-text once, and each recipient's text is that text with every marker replaced by the
 * expression's value. html-to-text shows an escaped value as the value itself (it decodes the
 * entities Handlebars wrote), so the value is taken unescaped; a heading upper-cases its words,
 * which the marker's letters show, and the value is upper-cased likewise. Lines are not wrapped
 * (htmlToText.ts), so no line break depends on a value's length.
 *
 * `textFor` gives exactly htmlToText(the rendered HTML) or null, and the caller then converts the
 * rendered HTML itself. Null for the whole template when a marker stands where the converter or
 * the HTML parser would read a value other than as plain words: block helpers, `{{{raw}}}`,
 * partials, inside a comment, a tag or attribute name, an unquoted attribute, an attribute the
 * text shows (other than a link's href), the text of a link, right after `<` or `&`; or when a
 * marker does not come out of the converter intact and at most once. Null for one recipient when
 * a value could be read otherwise: whitespace other than single inner spaces (the converter
 * collapses and trims it), control or marker characters, an empty value the converter would have
 * closed the space around, a link whose href the value turns into one the converter hides or
 * leaves out.
 */
export interface TextSkeleton {
  /** The text part for these variables; `footerUrl` when the unsubscribe footer is added with this link. */
  textFor(variables: Record<string, unknown>, footerUrl: string | null): string | null;
}

const OPEN = '\uE000';
const CLOSE = '\uE001';
const MARKER_IN_TEXT = /\uE000(?:([a-z]+)|([A-Z]+))\uE001/g;
const MARKER_CHARACTERS = /[\uE000\uE001]/;
/** A marker the tokenizer would read as part of a tag, comment or entity the value completes. */
const MARKER_AFTER_MARKUP = /(?:<[/!?-]*|&[#A-Za-z0-9]*)\uE000/;
/** A value read as written: no control, marker or converter whitespace characters but single inner spaces. */
const UNSAFE_VALUE = /[\u0000-\u001f\u007f\u200b\uE000\uE001]| {2}|^\s|\s$/;
const WHITESPACE = /[\s\u200b]/;
const ALL_WHITESPACE = /[\s\u200b]+/g;

/** Attributes html-to-text never shows (nor uses to choose a format): a value there changes no text. */
const SILENT_ATTRIBUTES = new Set([
  'align',
  'background',
  'bgcolor',
  'border',
  'cellpadding',
  'cellspacing',
  'class',
  'color',
  'dir',
  'face',
  'height',
  'id',
  'lang',
  'name',
  'rel',
  'role',
  'size',
  'src',
  'srcset',
  'style',
  'target',
  'title',
  'valign',
  'width',
]);
/** What a link with a marked href may hold: its text is then its text nodes and image alts. */
const LINK_CONTENT = new Set(['b', 'big', 'br', 'em', 'font', 'i', 'img', 'mark', 'small', 'span', 'strong', 'sub', 'sup', 'u']);

/** Bijective base 26: 0 → a, 25 → z, 26 → aa. */
function markerOf(index: number): string {
  let letters = '';
  for (let n = index; n >= 0; n = Math.floor(n / 26) - 1) letters = String.fromCharCode(97 + (n % 26)) + letters;
  return OPEN + letters + CLOSE;
}

function indexOfLetters(letters: string): number {
  let n = 0;
  for (const letter of letters.toLowerCase()) n = n * 26 + (letter.charCodeAt(0) - 96);
  return n - 1;
}

type Piece = string | { value: number; upper: boolean; emptyAllowed: boolean };

/** A link whose href holds markers: whether the converter shows it depends on the values. */
interface MarkedLink {
  href: Array<string | number>;
  shown: boolean;
  /** Whether it starts with `mailto:`, which the converter removes. */
  mailto: boolean;
  /** Its text and image alts without whitespace, upper-cased (compared with the href). */
  text: string;
}

interface Variant {
  pieces: Piece[];
  links: MarkedLink[];
}

const UNSUPPORTED = Symbol('unsupported');
type Built = Variant | typeof UNSUPPORTED;

class MarkedTemplate implements TextSkeleton {
  private plain?: Built;
  private footed?: Built;

  constructor(
    private readonly markedHtml: string,
    private readonly expressionCount: number,
    private readonly values: (variables: Record<string, unknown>) => string[],
  ) {}

  textFor(variables: Record<string, unknown>, footerUrl: string | null): string | null {
    let variant: Built;
    if (footerUrl === null) variant = this.plain ??= buildVariant(this.markedHtml, this.expressionCount);
    else variant = this.footed ??= buildVariant(withFooter(this.markedHtml, markerOf(this.expressionCount)), this.expressionCount + 1);
    if (variant === UNSUPPORTED) return null;

    let values: string[];
    try {
      values = this.values(variables);
    } catch {
      return null;
    }
    if (footerUrl !== null) values.push(footerUrl);
    for (const value of values) if (UNSAFE_VALUE.test(value)) return null;
    for (const link of variant.links) if (!linkReadAlike(link, values)) return null;

    let text = '';
    for (const piece of variant.pieces) {
      if (typeof piece === 'string') {
        text += piece;
        continue;
      }
      const value = values[piece.value];
      if (value === '' && !piece.emptyAllowed) return null;
      text += piece.upper ? value.toUpperCase() : value;
    }
    return text;
  }
}

function withFooter(html: string, urlMarker: string): string {
  const at = findLandmarks(html).bodyClose ?? html.length;
  return html.slice(0, at) + unsubscribeFooter(urlMarker) + html.slice(at);
}

/** html-to-text's own decision (anchor format, noAnchorUrl): the href is shown unless empty or a fragment. */
function hrefShown(href: string): boolean {
  const shown = href.replace(/^mailto:/, '');
  return shown !== '' && shown[0] !== '#';
}

/** The link is shown (or not) as in the skeleton, and hideLinkHrefIfSameAsText cannot apply. */
function linkReadAlike(link: MarkedLink, values: string[]): boolean {
  const href = link.href.map((part) => (typeof part === 'string' ? part : values[part])).join('');
  if (hrefShown(href) !== link.shown || href.startsWith('mailto:') !== link.mailto) return false;
  return (
    !link.shown ||
    href
      .replace(/^mailto:/, '')
      .replace(ALL_WHITESPACE, '')
      .toUpperCase() !== link.text
  );
}

function buildVariant(markedHtml: string, markerCount: number): Built {
  if (MARKER_AFTER_MARKUP.test(markedHtml)) return UNSUPPORTED;
  const links = markedLinks(markedHtml);
  if (!links) return UNSUPPORTED;
  const text = htmlToText(markedHtml);
  const pieces: Piece[] = [];
  const seen = new Set<number>();
  let last = 0;
  for (const match of text.matchAll(MARKER_IN_TEXT)) {
    const literal = text.slice(last, match.index);
    if (MARKER_CHARACTERS.test(literal)) return UNSUPPORTED;
    const index = indexOfLetters(match[1] ?? match[2]);
    if (index >= markerCount || seen.has(index)) return UNSUPPORTED;
    seen.add(index);
    const end = match.index + match[0].length;
    // An empty value leaves its neighbours as they are only when one of them is a word's character.
    const before = match.index > 0 ? text[match.index - 1] : '';
    const after = end < text.length ? text[end] : '';
    const emptyAllowed = (before !== '' && before !== CLOSE && !WHITESPACE.test(before)) || (after !== '' && after !== OPEN && !WHITESPACE.test(after));
    if (literal) pieces.push(literal);
    pieces.push({ value: index, upper: match[2] !== undefined, emptyAllowed });
    last = end;
  }
  const tail = text.slice(last);
  if (MARKER_CHARACTERS.test(tail)) return UNSUPPORTED;
  if (tail) pieces.push(tail);
  return { pieces, links };
}

/**
 * Reads the marked HTML with the parser html-to-text uses (the same tree): the links whose href
 * holds markers, or null when a marker stands anywhere the text could show it other than as words.
 */
function markedLinks(html: string): MarkedLink[] | null {
  let supported = true;
  const links: MarkedLink[] = [];
  /** Per open element: whether it is a link with an href, and the marked link it is. */
  const open: Array<{ linked: boolean; marked: MarkedLink | null }> = [];
  let linkedDepth = 0;
  let markedOpen: MarkedLink | null = null;
  const parser = new Parser(
    {
      onattribute(name, value, quote) {
        if (MARKER_CHARACTERS.test(name)) supported = false;
        else if (MARKER_CHARACTERS.test(value) && quote !== '"' && quote !== "'") supported = false;
      },
      onopentag(name, attribs) {
        if (MARKER_CHARACTERS.test(name)) supported = false;
        if (markedOpen && !LINK_CONTENT.has(name)) supported = false;
        if (markedOpen && name === 'img') markedOpen.text += (attribs.alt ?? '').replace(ALL_WHITESPACE, '').toUpperCase();
        let marked: MarkedLink | null = null;
        for (const [attribute, value] of Object.entries(attribs)) {
          if (!MARKER_CHARACTERS.test(value)) continue;
          if (name === 'a' && attribute === 'href') {
            marked = { href: hrefParts(value), shown: hrefShown(value), mailto: value.startsWith('mailto:'), text: '' };
            links.push(marked);
          } else if (!SILENT_ATTRIBUTES.has(attribute) && !attribute.startsWith('data-') && !attribute.startsWith('aria-')) {
            supported = false;
          }
        }
        const linked = name === 'a' && !!attribs.href;
        if (marked && markedOpen) supported = false;
        if (marked) markedOpen = marked;
        if (linked) linkedDepth++;
        open.push({ linked, marked });
      },
      onclosetag() {
        const element = open.pop();
        if (element?.linked) linkedDepth--;
        if (element?.marked) markedOpen = null;
      },
      ontext(data) {
        if (MARKER_CHARACTERS.test(data) && linkedDepth > 0) supported = false;
        if (markedOpen) markedOpen.text += data.replace(ALL_WHITESPACE, '').toUpperCase();
      },
      oncomment(data) {
        if (MARKER_CHARACTERS.test(data)) supported = false;
      },
      onprocessinginstruction(_name, data) {
        if (MARKER_CHARACTERS.test(data)) supported = false;
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);
  return supported ? links : null;
}

function hrefParts(href: string): Array<string | number> {
  const parts: Array<string | number> = [];
  let last = 0;
  for (const match of href.matchAll(MARKER_IN_TEXT)) {
    if (match.index > last) parts.push(href.slice(last, match.index));
    parts.push(indexOfLetters(match[1] ?? match[2]));
    last = match.index + match[0].length;
  }
  if (last < href.length) parts.push(href.slice(last));
  return parts;
}

/** What Handlebars escapes (its escapeExpression), read back. */
const ESCAPED = /&(?:amp|lt|gt|quot|#x27|#x60|#x3D);/g;
const UNESCAPED: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'", '&#x60;': '`', '&#x3D;': '=' };

/** The marked HTML and one render function for every expression's value, or null when the template has more than plain `{{expressions}}`. */
function markTemplate(source: string): TextSkeleton | null {
  if (MARKER_CHARACTERS.test(source)) return null;
  let program: hbs.AST.Program;
  try {
    program = handlebars.parse(source);
  } catch {
    return null;
  }
  let markedHtml = '';
  let count = 0;
  // One template renders every value, escaped (so none holds a `<`), separated by `<`.
  const expressions: hbs.AST.Statement[] = [];
  for (const statement of program.body) {
    if (statement.type === 'ContentStatement') markedHtml += (statement as hbs.AST.ContentStatement).value;
    else if (statement.type === 'CommentStatement') continue;
    else if (statement.type === 'MustacheStatement' && (statement as hbs.AST.MustacheStatement).escaped) {
      if (count > 0) expressions.push({ type: 'ContentStatement', value: '<', original: '<', loc: statement.loc } as unknown as hbs.AST.ContentStatement);
      expressions.push(statement);
      markedHtml += markerOf(count++);
    } else {
      return null;
    }
  }
  if (count === 0) return new MarkedTemplate(markedHtml, 0, () => []);
  const valuesTemplate = handlebars.compile({ ...program, body: expressions }, compileOptions);
  const values = (variables: Record<string, unknown>): string[] => {
    const rendered = withLoopBudget(() => valuesTemplate(variables, runtimeOptions)).split('<');
    if (rendered.length !== count) throw new Error('values do not match the expressions');
    return rendered.map((value) => (value.includes('&') ? value.replace(ESCAPED, (entity) => UNESCAPED[entity]) : value));
  };
  return new MarkedTemplate(markedHtml, count, values);
}

/** Skeletons by Handlebars source (the compiled template's own string, so a lookup reads no characters). */
const NONE = Symbol('none');
const skeletons = new LRUCache<string, TextSkeleton | typeof NONE>({
  max: 300,
  maxSize: 32_000_000,
  // The source, the marked HTML and the two variants' text, each about the source's size.
  sizeCalculation: (_skeleton, source) => 4 * source.length + 1,
});

/** The skeleton of the template compiled from this Handlebars source, or null when it has none. */
export function textSkeletonOf(source: string): TextSkeleton | null {
  let skeleton = skeletons.get(source);
  if (skeleton === undefined) {
    skeleton = markTemplate(source) ?? NONE;
    skeletons.set(source, skeleton);
  }
  return skeleton === NONE ? null : skeleton;
}
