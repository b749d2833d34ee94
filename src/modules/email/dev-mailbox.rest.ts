import { Router } from 'express';
import { escapeHtml } from '../../core/html.js';
import type { DevMailbox, StoredMail } from './dev-mailbox.js';

/** Escapes the plain-text body and turns its http(s) links into anchors (links are the point of a login mail). */
function linkify(text: string): string {
  return escapeHtml(text).replace(/https?:\/\/[^\s<>"']+/g, (url) => `<a href="${url}">${url}</a>`);
}

function renderMessage(m: StoredMail): string {
  return `<article id="${escapeHtml(m.id)}">
  <h2>${escapeHtml(m.subject)}</h2>
  <p class="meta">To ${escapeHtml(m.to)} · from ${escapeHtml(m.from)} · ${escapeHtml(m.createdAt)}</p>
  <pre>${linkify(m.text)}</pre>
</article>`;
}

function renderPage(messages: readonly StoredMail[]): string {
  const body = messages.length === 0 ? '<p>No messages yet.</p>' : messages.map(renderMessage).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>Tollgate dev mailbox</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
article { border-top: 1px solid #ccc; padding: 0.5rem 0; }
.meta { color: #555; }
pre { white-space: pre-wrap; word-break: break-all; background: #f6f6f6; padding: 0.75rem; }
</style>
</head>
<body>
<h1>Dev mailbox</h1>
<p>E-mail Tollgate would have sent, newest first (kept in memory, ${messages.length} now). Set SMTP_URL to send real mail.</p>
${body}
</body>
</html>`;
}

/** `GET /dev/mailbox` (HTML) and `GET /dev/mailbox.json`: mounted only when the dev mailbox is the mailer. */
export function devMailboxRouter(mailbox: DevMailbox): Router {
  const router = Router();
  router.use((_req, res, next) => {
    // The messages hold live login links: never cached, never leaked through a Referer header.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'no-referrer');
    next();
  });
  router.get('/mailbox.json', (_req, res) => {
    res.json({ messages: mailbox.list() });
  });
  router.get('/mailbox', (_req, res) => {
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'");
    res.type('html').send(renderPage(mailbox.list()));
  });
  return router;
}
