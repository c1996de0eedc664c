/**
 * Mail HTML (a template or campaign preview, a sent or received email, an outbox message) as the
 * dashboard shows it: only inside an iframe whose sandbox grants neither `allow-scripts` nor
 * `allow-same-origin` (contract 21), so the mail runs no script and cannot reach the app's cookie or
 * DOM. The frame's document inherits /app/'s Content-Security-Policy, so it loads nothing from
 * another host either (remote images stay blank unless a caller passes HTML that inlines them).
 *
 * Links open in a new tab (`<base target="_blank">` and `allow-popups`, escaping the sandbox so the
 * opened page works normally): clicking one leaves the dashboard as it was. Show HTML made for
 * looking (no open pixel, links pointing at their targets: contract 21's "looking is not
 * opening"); this component cannot tell tracked HTML from untracked.
 */
export function MailPreview(props: ({ html: string; src?: never } | { src: string; html?: never }) & { title: string; className?: string }) {
  const { title, className } = props;
  return (
    <iframe
      className={className ? `mail-preview ${className}` : 'mail-preview'}
      title={title}
      sandbox="allow-popups allow-popups-to-escape-sandbox"
      referrerPolicy="no-referrer"
      // `src`: a document the API serves with a CSP of its own (GET /emails/:id/preview.html, whose
      // images may come from any host: for a viewer who asked to see them), in the same sandbox.
      {...(props.src !== undefined ? { src: props.src } : { srcDoc: withLinksInNewTab(props.html) })}
    />
  );
}

/** Puts `<base target="_blank">` first in the document, so a link without its own target opens a new tab. */
function withLinksInNewTab(html: string): string {
  const base = '<base target="_blank">';
  const head = /<head(\s[^>]*)?>/i.exec(html);
  if (head) return html.slice(0, head.index + head[0].length) + base + html.slice(head.index + head[0].length);
  return base + html;
}
