import { useId, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { MailPreview } from '../components/MailPreview';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';
import { formatNumber } from '../components/format';
import './emails.css';

/** A message's parts made for looking at (GET /emails/:id/preview, /outbox/:id/preview): no open pixel, links at their targets. */
export interface PreviewParts {
  html: string | null;
  text: string | null;
  remoteImages: number;
}

type TabName = 'html' | 'text' | 'raw' | 'headers';
const TAB_LABELS: Record<TabName, string> = { html: 'HTML', text: 'Text', raw: 'Raw source', headers: 'Headers' };

/**
 * One message shown as a mail client and a mail debugger would show it (contract 21; Mailpit's
 * views): its HTML in the sandboxed frame of MailPreview, its text part, its raw source (loaded
 * when first asked for) and, when given, its header fields. The HTML is always the preview's
 * (untracked): looking is not opening.
 */
export function MessageView({
  title,
  preview,
  raw,
  headers,
  fileName,
  tracked = false,
  remoteImagesSrc,
}: {
  /** The frame's accessible name, e.g. "Email content". */
  title: string;
  preview: { isPending: boolean; error: unknown; data: PreviewParts | undefined };
  /** The raw source: its query key and how to fetch its bytes. */
  raw: { queryKey: readonly unknown[]; load: () => Promise<Blob> };
  headers?: Array<{ name: string; value: string }>;
  /** The name a downloaded .eml gets. */
  fileName: string;
  /** The raw source carries tracking (sent mail): opening it in a mail client would count. */
  tracked?: boolean;
  /** Where the API serves the HTML as a document that may load remote images (GET /emails/:id/preview.html), shown when the user asks. */
  remoteImagesSrc?: string;
}) {
  const tabs: TabName[] = headers && headers.length > 0 ? ['html', 'text', 'raw', 'headers'] : ['html', 'text', 'raw'];
  const [selected, setSelected] = useState<TabName>('html');
  const [remoteImagesLoaded, setRemoteImagesLoaded] = useState(false);
  const baseId = useId();
  const tabRefs = useRef<Partial<Record<TabName, HTMLButtonElement | null>>>({});
  const rawSource = useQuery({
    queryKey: raw.queryKey,
    queryFn: async () => {
      const blob = await raw.load();
      return { blob, text: await blob.text() };
    },
    enabled: selected === 'raw',
    staleTime: Infinity,
  });

  // The tabs pattern of WAI-ARIA: arrow keys (and Home/End) move between tabs, Tab moves into the panel.
  function onKeyDown(event: KeyboardEvent<HTMLDivElement>) {
    const index = tabs.indexOf(selected);
    const next =
      event.key === 'ArrowRight'
        ? tabs[(index + 1) % tabs.length]
        : event.key === 'ArrowLeft'
          ? tabs[(index - 1 + tabs.length) % tabs.length]
          : event.key === 'Home'
            ? tabs[0]
            : event.key === 'End'
              ? tabs[tabs.length - 1]
              : undefined;
    if (!next) return;
    event.preventDefault();
    setSelected(next);
    tabRefs.current[next]?.focus();
  }

  let panel: ReactNode;
  if (selected === 'raw') {
    panel = rawSource.isPending ? (
      <Loading label="Loading the raw source…" />
    ) : rawSource.isError ? (
      <ErrorNotice error={rawSource.error} />
    ) : (
      <>
        <div className="message-actions">
          <button type="button" className="button button-small" onClick={() => saveFile(rawSource.data.blob, fileName)}>
            Download .eml
          </button>
          {tracked ? (
            <span className="muted">It carries the open pixel and tracked links: opened in a mail client, they count like the recipient’s.</span>
          ) : null}
        </div>
        <pre className="message-source">{rawSource.data.text}</pre>
      </>
    );
  } else if (selected === 'headers') {
    panel = (
      <div className="table-wrap">
        <table className="table message-headers">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Value</th>
            </tr>
          </thead>
          <tbody>
            {(headers ?? []).map((header, index) => (
              <tr key={index}>
                <td className="nowrap">{header.name}</td>
                <td className="message-header-value">{header.value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  } else if (preview.isPending) {
    panel = <Loading label="Loading the message…" />;
  } else if (preview.error || !preview.data) {
    panel = <ErrorNotice error={preview.error} />;
  } else if (selected === 'text') {
    panel = preview.data.text ? <pre className="message-text">{preview.data.text}</pre> : <p className="empty">This message has no text part.</p>;
  } else {
    const { html, remoteImages } = preview.data;
    const many = remoteImages === 1 ? 'One remote image is' : `${formatNumber(remoteImages)} remote images are`;
    const showRemote = remoteImagesLoaded && remoteImagesSrc !== undefined;
    panel = html ? (
      <>
        {remoteImages > 0 && !showRemote ? (
          <div className="notice message-remote-images">
            {remoteImagesSrc ? (
              <>
                <p>{many} not loaded: loading an image from another host tells that host the message was looked at, and when.</p>
                <button type="button" className="button button-small" onClick={() => setRemoteImagesLoaded(true)}>
                  Load remote images
                </button>
              </>
            ) : (
              <p>
                {many} not loaded: the dashboard fetches nothing from other hosts, so looking at a message tells its sender nothing. To see them, download the
                raw source (.eml) and open it in a mail client.
              </p>
            )}
          </div>
        ) : null}
        {showRemote ? (
          <>
            <p className="message-remote-images muted" role="status">
              Remote images loaded.
            </p>
            <MailPreview src={remoteImagesSrc} title={title} />
          </>
        ) : (
          <MailPreview html={html} title={title} />
        )}
      </>
    ) : (
      <p className="empty">This message has no HTML part{preview.data.text ? ': see its text.' : '.'}</p>
    );
  }

  return (
    <div className="message-view">
      <div className="tabs" role="tablist" aria-label="Message views" onKeyDown={onKeyDown}>
        {tabs.map((tab) => (
          <button
            key={tab}
            ref={(element) => {
              tabRefs.current[tab] = element;
            }}
            type="button"
            role="tab"
            id={`${baseId}-tab-${tab}`}
            aria-selected={selected === tab}
            aria-controls={`${baseId}-panel`}
            tabIndex={selected === tab ? 0 : -1}
            className="tab"
            onClick={() => setSelected(tab)}
          >
            {TAB_LABELS[tab]}
          </button>
        ))}
      </div>
      <div className="tab-panel" role="tabpanel" id={`${baseId}-panel`} aria-labelledby={`${baseId}-tab-${selected}`} tabIndex={0}>
        {panel}
      </div>
    </div>
  );
}

/** Saves bytes the dashboard fetched through the API (with the session and X-Project-Id, which a plain link could not send). */
export function saveFile(blob: Blob, fileName: string) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A byte count as people read it: "812 B", "14.2 KB", "3.1 MB". */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${formatNumber(bytes)} B`;
  if (bytes < 1024 * 1024) return `${formatNumber(Math.round((bytes / 1024) * 10) / 10)} KB`;
  return `${formatNumber(Math.round((bytes / 1024 / 1024) * 10) / 10)} MB`;
}

/** A message's attachments, each with a button that downloads it through the API. */
export function AttachmentList({
  attachments,
  download,
}: {
  attachments: Array<{ index: number; filename: string | null; contentType: string; size: number }>;
  download: (index: number) => Promise<Blob>;
}) {
  const [failure, setFailure] = useState<unknown>(null);
  const [busy, setBusy] = useState<number | null>(null);
  if (attachments.length === 0) return <p className="empty">No attachments.</p>;
  return (
    <>
      {failure ? <ErrorNotice error={failure} title="The attachment could not be downloaded" /> : null}
      <ul className="attachment-list">
        {attachments.map((attachment) => {
          const name = attachment.filename || `attachment-${attachment.index + 1}`;
          return (
            <li key={attachment.index}>
              <span className="attachment-name">{name}</span>
              <span className="muted">
                {attachment.contentType} · {formatBytes(attachment.size)}
              </span>
              <button
                type="button"
                className="button button-small"
                aria-busy={busy === attachment.index || undefined}
                disabled={busy === attachment.index}
                onClick={() => {
                  setBusy(attachment.index);
                  setFailure(null);
                  download(attachment.index)
                    .then((blob) => saveFile(blob, name))
                    .catch(setFailure)
                    .finally(() => setBusy(null));
                }}
              >
                Download {name}
              </button>
            </li>
          );
        })}
      </ul>
    </>
  );
}
