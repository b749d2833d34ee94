import { escapeHtml } from '../../core/html.js';
import type { MailMessage } from '../email/mailer.js';

export interface InvitationEmailInput {
  readonly to: string;
  readonly appName: string;
  readonly organizationName: string;
  readonly link: string;
  readonly expiresAt: Date;
}

/** Operator- or customer-chosen names go into the subject: one line, so they cannot shape headers. */
const oneLine = (text: string) => text.replace(/[\r\n\t]+/g, ' ').trim();

/** The invitation e-mail: a plain-text part and an HTML part carrying the same link. */
export function invitationEmail(input: InvitationEmailInput): MailMessage {
  const appName = oneLine(input.appName);
  const organization = oneLine(input.organizationName);
  const subject = `You are invited to join ${organization} on ${appName}`;
  const until = `The invitation can be accepted until ${input.expiresAt.toUTCString()}.`;
  const text = [
    subject,
    '',
    'Open this link to accept the invitation and sign in:',
    '',
    input.link,
    '',
    until,
    'If you did not expect this invitation, you can ignore this e-mail.',
    '',
  ].join('\n');
  const html = `<!doctype html>
<html lang="en">
<body style="font-family: system-ui, sans-serif; line-height: 1.5">
<h1 style="font-size: 20px">${escapeHtml(subject)}</h1>
<p><a href="${escapeHtml(input.link)}" style="display: inline-block; padding: 10px 18px; background: #111; color: #fff; text-decoration: none; border-radius: 6px">Accept the invitation</a></p>
<p>Or copy this address into your browser:<br><span style="word-break: break-all">${escapeHtml(input.link)}</span></p>
<p style="color: #555">${escapeHtml(until)} If you did not expect this invitation, you can ignore this e-mail.</p>
</body>
</html>
`;
  return { to: input.to, subject, text, html };
}
