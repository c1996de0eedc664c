import { createBrowserRouter, Outlet } from 'react-router';
import { LogInPage } from './auth/LogInPage';
import { SignUpPage } from './auth/SignUpPage';
import { RequireSession } from './auth/RequireSession';
import { HomeRedirect } from './projects/HomeRedirect';
import { NotFoundPage } from './NotFoundPage';
import { RouteError } from './RouteError';
import { Loading } from './components/Loading';

/**
 * The dashboard's pages, under /app/ (the router's basename). The log-in and sign-up pages are in
 * the first script; every page behind the log-in is its own chunk, loaded when first opened
 * (`lazy`), so the first load stays small (contract 21: at most 500 KB of JavaScript, gzip) as
 * pages are added. A project's pages live under /projects/:projectId, so an address names its
 * project and a reload or a shared link opens the same page.
 */
export const router = createBrowserRouter(
  [
    {
      element: <Outlet />,
      errorElement: <RouteError />,
      hydrateFallbackElement: (
        <main className="page-center">
          <Loading />
        </main>
      ),
      children: [
        { path: '/login', element: <LogInPage /> },
        { path: '/signup', element: <SignUpPage /> },
        { path: '/forgot-password', lazy: async () => ({ Component: (await import('./auth/ForgotPasswordPage')).ForgotPasswordPage }) },
        { path: '/reset-password', lazy: async () => ({ Component: (await import('./auth/ResetPasswordPage')).ResetPasswordPage }) },
        { path: '/verify-email', lazy: async () => ({ Component: (await import('./auth/VerifyEmailPage')).VerifyEmailPage }) },
        {
          path: '/',
          element: <RequireSession />,
          children: [
            { index: true, element: <HomeRedirect /> },
            { path: 'projects/new', lazy: async () => ({ Component: (await import('./projects/NewProjectPage')).NewProjectPage }) },
            {
              path: 'projects/:projectId',
              lazy: async () => ({ Component: (await import('./projects/ProjectLayout')).ProjectLayout }),
              children: [
                { index: true, lazy: async () => ({ Component: (await import('./overview/OverviewPage')).OverviewPage }) },
                { path: 'contacts', lazy: async () => ({ Component: (await import('./contacts/ContactsPage')).ContactsPage }) },
                { path: 'contacts/new', lazy: async () => ({ Component: (await import('./contacts/NewContactPage')).NewContactPage }) },
                { path: 'contacts/import', lazy: async () => ({ Component: (await import('./contacts/ImportPage')).ImportPage }) },
                { path: 'contacts/:contactId', lazy: async () => ({ Component: (await import('./contacts/ContactPage')).ContactPage }) },
                { path: 'segments', lazy: async () => ({ Component: (await import('./segments/SegmentsPage')).SegmentsPage }) },
                { path: 'segments/:segmentId', lazy: async () => ({ Component: (await import('./segments/SegmentPage')).SegmentPage }) },
                { path: 'templates', lazy: async () => ({ Component: (await import('./templates/TemplatesPage')).TemplatesPage }) },
                { path: 'templates/new', lazy: async () => ({ Component: (await import('./templates/TemplateEditorPage')).NewTemplatePage }) },
                { path: 'templates/:templateId', lazy: async () => ({ Component: (await import('./templates/TemplateEditorPage')).TemplatePage }) },
                { path: 'campaigns', lazy: async () => ({ Component: (await import('./campaigns/CampaignsPage')).CampaignsPage }) },
                { path: 'campaigns/new', lazy: async () => ({ Component: (await import('./campaigns/CampaignComposePage')).NewCampaignPage }) },
                { path: 'campaigns/:campaignId', lazy: async () => ({ Component: (await import('./campaigns/CampaignPage')).CampaignPage }) },
                { path: 'campaigns/:campaignId/edit', lazy: async () => ({ Component: (await import('./campaigns/CampaignComposePage')).EditCampaignPage }) },
                { path: 'workflows', lazy: async () => ({ Component: (await import('./workflows/WorkflowsPage')).WorkflowsPage }) },
                { path: 'workflows/:workflowId', lazy: async () => ({ Component: (await import('./workflows/WorkflowPage')).WorkflowPage }) },
                { path: 'emails', lazy: async () => ({ Component: (await import('./emails/EmailsPage')).EmailsPage }) },
                { path: 'emails/:emailId', lazy: async () => ({ Component: (await import('./emails/EmailPage')).EmailPage }) },
                { path: 'activity', lazy: async () => ({ Component: (await import('./activity/ActivityPage')).ActivityPage }) },
                { path: 'domains', lazy: async () => ({ Component: (await import('./domains/DomainsPage')).DomainsPage }) },
                { path: 'developers', lazy: async () => ({ Component: (await import('./developers/DevelopersPage')).DevelopersPage }) },
                { path: 'developers/webhooks', lazy: async () => ({ Component: (await import('./developers/WebhooksPage')).WebhooksPage }) },
                {
                  path: 'developers/webhooks/:endpointId',
                  lazy: async () => ({ Component: (await import('./developers/WebhookEndpointPage')).WebhookEndpointPage }),
                },
                { path: 'settings', lazy: async () => ({ Component: (await import('./settings/SettingsPage')).SettingsPage }) },
                { path: 'outbox', lazy: async () => ({ Component: (await import('./outbox/OutboxPage')).OutboxPage }) },
                { path: 'outbox/:messageId', lazy: async () => ({ Component: (await import('./outbox/OutboxMessagePage')).OutboxMessagePage }) },
                { path: '*', element: <NotFoundPage inShell /> },
              ],
            },
          ],
        },
        { path: '*', element: <NotFoundPage /> },
      ],
    },
  ],
  { basename: '/app' },
);
