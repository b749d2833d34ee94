import { escapeHtml } from '../../core/html.js';
import type { MailMessage } from '../email/mailer.js';

export interface MagicLinkEmailInput {
  readonly to: string;
  readonly appName: string;
  readonly link: string;
  readonly expiryMinutes: number;
}

/** The login e-mail: a plain-text part and an HTML part carrying the same link. */
export function magicLinkEmail(input: MagicLinkEmailInput): MailMessage {
  // The app name is operator-chosen text; keep it on one line so it cannot shape the headers.
  const appName = input.appName.replace(/[\r\n\t]+/g, ' ').trim();
  const minutes = input.expiryMinutes === 1 ? '1 minute' : `${input.expiryMinutes} minutes`;
  // Opening the link does not use it up (mail scanners open links too): signing in with it does.
  const lifetime = `You can open the link until you have signed in with it, for ${minutes} at most.`;
  const text = [
    `Sign in to ${appName}`,
    '',
    'Open this link to sign in:',
    '',
    input.link,
    '',
    lifetime,
    'If you did not ask to sign in, you can ignore this e-mail.',
    '',
  ].join('\n');
  const html = `<!doctype html>
<html lang="en">
<body style="font-family: system-ui, sans-serif; line-height: 1.5">
<h1 style="font-size: 20px">Sign in to ${escapeHtml(appName)}</h1>
<p><a href="${escapeHtml(input.link)}" style="display: inline-block; padding: 10px 18px; background: #111; color: #fff; text-decoration: none; border-radius: 6px">Sign in</a></p>
<p>Or copy this address into your browser:<br><span style="word-break: break-all">${escapeHtml(input.link)}</span></p>
<p style="color: #555">${lifetime} If you did not ask to sign in, you can ignore this e-mail.</p>
</body>
</html>
`;
  return { to: input.to, subject: `Sign in to ${appName}`, text, html };
}
