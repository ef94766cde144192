/** The authorization server's issuer, {oauth_url} (DESIGN.md: PUBLIC_BASE_URL/oauth). */
export const oauthIssuer = (publicBaseUrl: string): string => `${publicBaseUrl}/oauth`;
