//! Where a webhook may send: http or https, and, unless the operator sets
//! `WEBHOOK_ALLOW_PRIVATE=true`, only to public addresses. A webhook is a
//! request the service makes on an admin's word; without this an admin
//! token (or a leaked one) would reach the database, Redis or a cloud
//! metadata endpoint inside the network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// The longest URL taken.
const MAX_URL_LEN: usize = 2048;

/// A webhook URL that passed [`check_destination`].
#[derive(Debug, Clone)]
pub struct Destination {
    url: reqwest::Url,
}

/// Why a URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not an absolute http(s) URL with a host, or too long.
    Malformed,
    /// A loopback, private, link-local or otherwise internal address.
    Internal,
    /// The host name resolves to no address.
    Unresolved,
}

/// Checks what can be checked without the network: the scheme, the host,
/// and the address when the host is one.
pub fn check_destination(raw: &str, allow_private: bool) -> Result<Destination, Refusal> {
    if raw.len() > MAX_URL_LEN {
        return Err(Refusal::Malformed);
    }
    let url = reqwest::Url::parse(raw).map_err(|_| Refusal::Malformed)?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(Refusal::Malformed);
    }
    let destination = Destination { url };
    match destination.literal_address() {
        Some(address) if !allow_private && is_internal(address) => Err(Refusal::Internal),
        _ => Ok(destination),
    }
}

impl Destination {
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// Resolves a host name and refuses it when any address it has now is
    /// internal (the sender checks again at each connection).
    pub async fn resolve(&self, allow_private: bool) -> Result<(), Refusal> {
        if allow_private || self.literal_address().is_some() {
            return Ok(());
        }
        let host = self.url.host_str().unwrap_or_default();
        let port = self.url.port_or_known_default().unwrap_or(80);
        let addresses: Vec<SocketAddr> =
            tokio::net::lookup_host((host, port)).await.map_err(|_| Refusal::Unresolved)?.collect();
        if addresses.is_empty() {
            return Err(Refusal::Unresolved);
        }
        if addresses.iter().any(|address| is_internal(address.ip())) {
            return Err(Refusal::Internal);
        }
        Ok(())
    }

    fn literal_address(&self) -> Option<IpAddr> {
        let host = self.url.host_str()?;
        host.trim_start_matches('[').trim_end_matches(']').parse().ok()
    }
}

/// Loopback, private (RFC 1918, unique local), link-local, shared (CGNAT),
/// unspecified, broadcast and IPv4-mapped forms of them.
pub fn is_internal(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_internal_v4(v4),
            None => is_internal_v6(v6),
        },
    }
}

fn is_internal_v4(address: Ipv4Addr) -> bool {
    let [first, second, ..] = address.octets();
    address.is_loopback()
        || address.is_private()
        || address.is_link_local()
        || address.is_unspecified()
        || address.is_broadcast()
        || first == 0
        || (first == 100 && (64..128).contains(&second))
}

fn is_internal_v6(address: Ipv6Addr) -> bool {
    let first = address.segments()[0];
    address.is_loopback() || address.is_unspecified() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
}

/// The sender's resolver: drops internal addresses unless allowed, so a
/// name that points inside since the webhook was made connects nowhere.
pub(super) struct PublicResolver {
    pub allow_private: bool,
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> =
                found.filter(|address| allow_private || !is_internal(address.ip())).collect();
            if allowed.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            let addresses: Addrs = Box::new(allowed.into_iter());
            Ok(addresses)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_refused_unless_allowed() {
        for url in [
            "http://127.0.0.1/hook",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1:8080/",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(check_destination(url, false).err(), Some(Refusal::Internal), "{url}");
            assert!(check_destination(url, true).is_ok(), "{url}");
        }
        for url in ["https://203.0.113.9/hook", "http://[2001:db8::1]/", "https://hooks.example.com/x"] {
            assert!(check_destination(url, false).is_ok(), "{url}");
        }
    }

    #[test]
    fn only_absolute_http_urls_are_taken() {
        for url in ["ftp://example.com/", "example.com/hook", "http://", "file:///etc/passwd", "mailto:a@b.c"] {
            assert_eq!(check_destination(url, true).err(), Some(Refusal::Malformed), "{url}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(check_destination(&long, true).err(), Some(Refusal::Malformed));
    }

    #[tokio::test]
    async fn a_name_for_loopback_is_refused() {
        let destination = check_destination("http://localhost:9/", false).expect("well-formed");
        assert_eq!(destination.resolve(false).await, Err(Refusal::Internal));
        assert_eq!(destination.resolve(true).await, Ok(()));
    }
}
