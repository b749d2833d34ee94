import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt from 'markdown-it';

/**
 * Every relative link in README.md and docs/ leads somewhere: the file exists, and a `#fragment` into a
 * Markdown page names one of its headings as GitHub renders it (github-slugger is the implementation of
 * GitHub's anchor rules: lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for repeats).
 * Markdown is parsed with markdown-it, so links inside code blocks and code spans are not links.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const markdown = new MarkdownIt({ html: true });

type Token = ReturnType<MarkdownIt['parse']>[number];

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(full);
    return entry.name.endsWith('.md') ? [full] : [];
  });
}

/** The text GitHub makes a heading's anchor from: the heading as rendered, without markup. */
function plainText(inline: Token): string {
  return (inline.children ?? [])
    .filter((child) => child.type === 'text' || child.type === 'code_inline')
    .map((child) => child.content)
    .join('');
}

/** The anchors of a Markdown text's headings, in GitHub's spelling. */
function anchorsOf(text: string): Set<string> {
  const slugger = new GithubSlugger();
  const tokens = markdown.parse(text, {});
  const anchors = new Set<string>();
  tokens.forEach((token, i) => {
    if (token.type === 'heading_open') anchors.add(slugger.slug(plainText(tokens[i + 1]!)));
  });
  return anchors;
}

/** Every link and image target of a Markdown text. */
function linksOf(text: string): string[] {
  return markdown
    .parse(text, {})
    .flatMap((token) => token.children ?? [])
    .flatMap((child) => {
      if (child.type === 'link_open') return [child.attrGet('href') ?? ''];
      if (child.type === 'image') return [child.attrGet('src') ?? ''];
      return [];
    });
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOfFile(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = anchorsOf(readFileSync(file, 'utf8'));
    anchorCache.set(file, anchors);
  }
  return anchors;
}

/** What is wrong with each relative link of `file` (an empty list when every one resolves). */
function brokenLinks(file: string, text = readFileSync(file, 'utf8')): string[] {
  const where = path.relative(ROOT, file);
  return linksOf(text).flatMap((href) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return []; // another site: not checked here
    if (href.startsWith('/')) return [`${where}: ${href} is absolute: link relative to the page`];
    const hash = href.indexOf('#');
    const target = decodeURIComponent(hash === -1 ? href : href.slice(0, hash));
    const fragment = hash === -1 ? undefined : decodeURIComponent(href.slice(hash + 1));
    const resolved = target === '' ? file : path.resolve(path.dirname(file), target);
    if (!existsSync(resolved)) return [`${where}: ${href}: no file ${path.relative(ROOT, resolved)}`];
    if (fragment === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) return [];
    if (anchorsOfFile(resolved).has(fragment)) return [];
    return [`${where}: ${href}: no heading with the anchor #${fragment} in ${path.relative(ROOT, resolved)}`];
  });
}

describe('documentation links', () => {
  const files = [
    path.join(ROOT, 'README.md'),
    path.join(ROOT, 'packages', 'client', 'README.md'),
    ...markdownFiles(path.join(ROOT, 'docs')),
  ];

  it('finds the docs tree', () => {
    const names = files.map((file) => path.relative(ROOT, file));
    expect(names).toEqual(expect.arrayContaining(['README.md', 'docs/README.md', 'docs/architecture.md']));
    expect(names.length).toBeGreaterThan(20);
  });

  it('resolves every relative link and anchor in README.md, docs/ and the client package README', () => {
    expect(files.flatMap((file) => brokenLinks(file))).toEqual([]);
  });

  it('spells anchors as GitHub does', () => {
    const text = [
      '# The client library (`@tollgate/client`)',
      '## 1. Allow your callback URLs',
      "## Tollgate's choices",
      '## Fast, and never stale',
      '## Fast, and never stale',
      '```sh',
      '# a shell comment, not a heading',
      '```',
    ].join('\n');
    expect([...anchorsOf(text)]).toEqual([
      'the-client-library-tollgateclient',
      '1-allow-your-callback-urls',
      'tollgates-choices',
      'fast-and-never-stale',
      'fast-and-never-stale-1',
    ]);
  });

  it('reports a missing file, a missing anchor and an absolute link, and ignores code and other sites', () => {
    const page = path.join(ROOT, 'docs', 'guides', 'customers.md');
    const text = [
      '[ok](../README.md) [ok](#deleting-a-customer) [ok](login.md#2-ask-for-a-link)',
      '[gone](nowhere.md) [no anchor](login.md#no-such-heading) [absolute](/docs/README.md)',
      '`[not a link](nowhere.md)` [elsewhere](https://example.com/x.md#y)',
      '```md',
      '[in a code block](nowhere.md)',
      '```',
    ].join('\n');
    expect(brokenLinks(page, `# Customers\n\n## Deleting a customer\n\n${text}`)).toEqual([
      'docs/guides/customers.md: nowhere.md: no file docs/guides/nowhere.md',
      'docs/guides/customers.md: login.md#no-such-heading: no heading with the anchor #no-such-heading in docs/guides/login.md',
      'docs/guides/customers.md: /docs/README.md is absolute: link relative to the page',
    ]);
  });
});
