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
    // What is stored is the parsed form, which percent-encoding and
    // punycode make longer than what was sent.
    if url.as_str().len() > MAX_URL_LEN {
        return Err(Refusal::Malformed);
    }
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

/// IANA's IPv4 special-purpose address registry (RFC 6890 and its
/// updates), the blocks that are not globally reachable, plus multicast
/// (224/4, its own registry): no webhook goes there. The registry's few
/// globally reachable anycast blocks (192.31.196.0/24, 192.52.193.0/24,
/// 192.175.48.0/24) are not listed; 192.0.0.0/24 is refused whole.
const SPECIAL_V4: [(Ipv4Addr, u8); 15] = [
    (Ipv4Addr::new(0, 0, 0, 0), 8),       // "this network"
    (Ipv4Addr::new(10, 0, 0, 0), 8),      // private (RFC 1918)
    (Ipv4Addr::new(100, 64, 0, 0), 10),   // shared address space (CGNAT)
    (Ipv4Addr::new(127, 0, 0, 0), 8),     // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16),  // link-local (cloud metadata)
    (Ipv4Addr::new(172, 16, 0, 0), 12),   // private
    (Ipv4Addr::new(192, 0, 0, 0), 24),    // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24),    // documentation (TEST-NET-1)
    (Ipv4Addr::new(192, 88, 99, 0), 24),  // 6to4 relay anycast (deprecated)
    (Ipv4Addr::new(192, 168, 0, 0), 16),  // private
    (Ipv4Addr::new(198, 18, 0, 0), 15),   // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation (TEST-NET-2)
    (Ipv4Addr::new(203, 0, 113, 0), 24),  // documentation (TEST-NET-3)
    (Ipv4Addr::new(224, 0, 0, 0), 4),     // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4),     // reserved, and the broadcast address
];

/// IANA's IPv6 special-purpose address registry, the same way, plus
/// multicast, deprecated site-local, and every form that carries an IPv4
/// address which a translator or tunnel would reach (IPv4-compatible,
/// -translated, NAT64, 6to4, Teredo): those are refused whole rather than
/// judged by the address inside. IPv4-mapped addresses are judged by the
/// IPv4 address they carry (`is_internal`).
const SPECIAL_V6: [(Ipv6Addr, u8); 15] = [
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 96), // IPv4-compatible (deprecated), ::, ::1
    (Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0), 96), // IPv4-translated (SIIT)
    (Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96), // NAT64 well-known prefix
    (Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48), // NAT64 local use
    (Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64), // discard-only
    (Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0), 64), // dummy prefix
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23), // IETF protocol assignments (Teredo, benchmarking, ...)
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32), // documentation
    (Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16), // 6to4
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20), // documentation
    (Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16), // segment routing (SRv6) SIDs
    (Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7), // unique local
    (Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10), // link-local
    (Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10), // site-local (deprecated)
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8), // multicast
];

/// Whether an address is in a special-purpose block (see `SPECIAL_V4`,
/// `SPECIAL_V6`): loopback, private, link-local, documentation, NAT64,
/// 6to4 and the rest. IPv4-mapped IPv6 addresses are judged as IPv4.
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
    let bits = u32::from(address);
    SPECIAL_V4.iter().any(|(block, length)| bits >> (32 - length) == u32::from(*block) >> (32 - length))
}

fn is_internal_v6(address: Ipv6Addr) -> bool {
    let bits = u128::from(address);
    SPECIAL_V6.iter().any(|(block, length)| bits >> (128 - length) == u128::from(*block) >> (128 - length))
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

    /// Every special-purpose block, at its first and last address and
    /// spelled the ways an attacker would (issue 39's list included); and
    /// public addresses right outside some of them.
    #[test]
    fn special_purpose_addresses_are_refused_unless_allowed() {
        let refused = [
            "0.0.0.0",
            "0.255.255.255",
            "10.0.0.0",
            "10.255.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "127.0.0.1",
            "127.255.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.1",
            "192.0.0.255",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.0",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
            "[::]",
            "[::1]",
            "[::127.0.0.1]",
            "[::ffff:127.0.0.1]",
            "[::ffff:10.0.0.1]",
            "[::ffff:0:7f00:1]",
            "[64:ff9b::7f00:1]",
            "[64:ff9b::808:808]",
            "[64:ff9b:1::1]",
            "[100::1]",
            "[100:0:0:1::1]",
            "[2001::1]",
            "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
            "[2001:2::1]",
            "[2001:1ff:ffff::1]",
            "[2001:db8::1]",
            "[2002:7f00:1::1]",
            "[2002::1]",
            "[3fff::1]",
            "[3fff:fff:ffff::1]",
            "[5f00::1]",
            "[fc00::1]",
            "[fd12:3456::1]",
            "[fe80::1]",
            "[febf::1]",
            "[fec0::1]",
            "[feff::1]",
            "[ff02::1]",
        ];
        for host in refused {
            let url = format!("http://{host}/hook");
            assert_eq!(check_destination(&url, false).err(), Some(Refusal::Internal), "{url}");
            assert!(check_destination(&url, true).is_ok(), "{url}");
        }
        let public = [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.1",
            "192.31.196.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "[2606:4700:4700::1111]",
            "[2001:200::1]",
            "[2003::1]",
            "[::ffff:8.8.8.8]",
            "[2a00:1450:4001::1]",
        ];
        for host in public {
            let url = format!("https://{host}/hook");
            assert!(check_destination(&url, false).is_ok(), "{url}");
        }
        assert!(check_destination("https://hooks.example.com/x", false).is_ok());
    }

    #[test]
    fn only_absolute_http_urls_are_taken() {
        for url in ["ftp://example.com/", "example.com/hook", "http://", "file:///etc/passwd", "mailto:a@b.c"] {
            assert_eq!(check_destination(url, true).err(), Some(Refusal::Malformed), "{url}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(check_destination(&long, true).err(), Some(Refusal::Malformed));
        // Short as sent, long as stored: each é is six characters encoded.
        let encoded = format!("https://example.com/{}", "é".repeat(MAX_URL_LEN / 4));
        assert!(encoded.chars().count() < MAX_URL_LEN);
        assert_eq!(check_destination(&encoded, true).err(), Some(Refusal::Malformed));
    }

    #[tokio::test]
    async fn a_name_for_loopback_is_refused() {
        let destination = check_destination("http://localhost:9/", false).expect("well-formed");
        assert_eq!(destination.resolve(false).await, Err(Refusal::Internal));
        assert_eq!(destination.resolve(true).await, Ok(()));
    }
}
