/**
 * Deepest bracket nesting (`{`, `[` and `(` together) a GraphQL document may have. graphql-js parses
 * (and its rules walk) by recursion, so a document of a few KB nested a few thousand levels overflows the
 * stack before any depth rule can see it. The deepest legitimate documents are far shallower: the standard
 * introspection query nests 17 braces and the data depth limit allows 10 fields.
 */
export const MAX_DOCUMENT_NESTING = 64;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const OPEN_PAREN = 0x28;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const CLOSE_PAREN = 0x29;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const HASH = 0x23;
const NEWLINE = 0x0a;
const RETURN = 0x0d;

/**
 * Whether GraphQL source text nests `{`, `[` and `(` (counted together) deeper than `maxNesting`, found by
 * one linear scan before anything is parsed. Brackets inside strings, block strings and comments do not
 * count. The scan only has to be right for documents that parse: for any other the parser reports the
 * syntax error, and what the scan counted in it does not matter beyond being bounded.
 */
export function documentNestingExceeds(text: string, maxNesting: number = MAX_DOCUMENT_NESTING): boolean {
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === HASH) {
      // A comment runs to the end of the line.
      while (i + 1 < length && text.charCodeAt(i + 1) !== NEWLINE && text.charCodeAt(i + 1) !== RETURN) i++;
    } else if (code === QUOTE) {
      if (text.startsWith('""', i + 1)) {
        // A block string ends at the next `"""` not escaped as `\"""` (its only escape).
        i += 3;
        while (i < length && !text.startsWith('"""', i)) i += text.startsWith('\\"""', i) ? 4 : 1;
        i += 2;
      } else {
        // A string ends at the next unescaped quote (or, unterminated, at the end of the line).
        i++;
        while (i < length) {
          const c = text.charCodeAt(i);
          if (c === BACKSLASH) i += 2;
          else if (c === QUOTE || c === NEWLINE || c === RETURN) break;
          else i++;
        }
      }
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET || code === OPEN_PAREN) {
      if (++depth > maxNesting) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET || code === CLOSE_PAREN) {
      depth--;
    }
  }
  return false;
}
