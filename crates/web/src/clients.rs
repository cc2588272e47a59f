//! Who a request comes from, for the per-client shares: a client is an address, grouped so that
//! one machine or one network cannot pose as many. Every loopback address (`127.0.0.0/8`, `::1`)
//! is one client; an IPv4 address is a client of its own (or its `/N` with a shorter prefix); an
//! IPv6 address counts by its `/64`, the smallest network a household or a host is given. A
//! proxy's header names the client only when the request comes from a proxy the operator trusts.

use axum::http::HeaderMap;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;

/// One client, as the shares count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    /// Every address of this machine.
    Loopback,
    /// An IPv4 address (or network), masked to the grouping's prefix.
    V4(u32),
    /// An IPv6 network, masked to the grouping's prefix.
    V6(u128),
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Client::Loopback => write!(f, "this machine"),
            Client::V4(a) => write!(f, "{}", Ipv4Addr::from(*a)),
            Client::V6(a) => write!(f, "{}", Ipv6Addr::from(*a)),
        }
    }
}

/// How addresses are grouped into clients, and which proxies are believed.
#[derive(Clone, Debug)]
pub struct Grouping {
    /// IPv4 addresses sharing this many leading bits are one client (32: each address).
    pub v4_prefix: u8,
    /// IPv6 addresses sharing this many leading bits are one client (64: each network).
    pub v6_prefix: u8,
    /// A header a trusted proxy names the client in (`X-Forwarded-For`, `X-Real-IP`):
    /// the rightmost address in it that is not itself a trusted proxy.
    pub header: Option<String>,
    /// The proxies whose header is believed; a request from any other address is its own client
    /// whatever it claims.
    pub trusted: Vec<IpAddr>,
}

impl Default for Grouping {
    fn default() -> Self {
        Grouping { v4_prefix: 32, v6_prefix: 64, header: None, trusted: Vec::new() }
    }
}

/// An IPv4 address inside IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn mask32(bits: u8) -> u32 {
    if bits == 0 { 0 } else { u32::MAX << (32 - u32::from(bits.min(32))) }
}

fn mask128(bits: u8) -> u128 {
    if bits == 0 { 0 } else { u128::MAX << (128 - u32::from(bits.min(128))) }
}

impl Grouping {
    /// The client an address belongs to.
    pub fn of(&self, ip: IpAddr) -> Client {
        match canonical(ip) {
            ip if ip.is_loopback() => Client::Loopback,
            IpAddr::V4(v4) => Client::V4(u32::from(v4) & mask32(self.v4_prefix)),
            IpAddr::V6(v6) => Client::V6(u128::from(v6) & mask128(self.v6_prefix)),
        }
    }

    /// Whether requests from `ip` come through a proxy whose header is believed.
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        self.header.is_some() && self.trusted.iter().any(|t| canonical(*t) == canonical(ip))
    }

    /// The client a request from `peer` with `headers` comes from.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> Client {
        if let Some(name) = self.header.as_deref().filter(|_| self.is_trusted(peer)) {
            // Each proxy appends the address it heard from: read from the right, past the
            // trusted ones; the first other address is the client (what it wrote before that
            // is its own claim, and not believed).
            let named: Vec<&str> =
                headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).collect();
            for text in named.into_iter().rev() {
                let Some(ip) = parse_address(text) else { break };
                if !self.trusted.iter().any(|t| canonical(*t) == canonical(ip)) {
                    return self.of(ip);
                }
            }
        }
        self.of(peer)
    }
}

/// An address as proxies write it: `203.0.113.7`, `[2001:db8::1]:443`, `203.0.113.7:5000`.
fn parse_address(text: &str) -> Option<IpAddr> {
    let t = text.trim();
    if let Ok(ip) = t.parse() {
        return Some(ip);
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
        return inner.parse().ok();
    }
    t.rsplit_once(':').and_then(|(a, _)| a.parse().ok())
}

/// The most one client may hold of a resource of `total` units while the others hold `others`:
/// its fixed `share`, and no more than half of what the others leave (rounded up, so a client
/// holding nothing finds one while one is free). Shares shrink as the server fills: a few
/// addresses cannot take it all, and k clients can fill at most 1 - 2^-k of what their shares
/// alone would let them take.
pub fn fair_share(total: u64, others: u64, share: u64) -> u64 {
    share.min(total.saturating_sub(others).div_ceil(2))
}

/// Counts of something per client, with a cap on each.
#[derive(Debug, Default)]
pub struct Counts {
    held: Mutex<HashMap<Client, usize>>,
}

impl Counts {
    /// Takes one for `client` if it holds fewer than its [`fair_share`] of `total`, of which
    /// `used` are held in all.
    pub fn take_fair(&self, client: Client, total: usize, used: usize, share: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(client).or_insert(0);
        let others = used.saturating_sub(*n);
        if (*n as u64) >= fair_share(total as u64, others as u64, share as u64) {
            if *n == 0 {
                held.remove(&client);
            }
            return false;
        }
        *n += 1;
        true
    }

    /// Takes one for `client` if it holds fewer than `cap`.
    pub fn take(&self, client: Client, cap: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(client).or_insert(0);
        if *n >= cap {
            return false;
        }
        *n += 1;
        true
    }

    pub fn give(&self, client: Client) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_are_grouped_into_clients() {
        let g = Grouping::default();
        for a in ["127.0.0.1", "127.0.0.2", "127.255.3.4", "::1", "::ffff:127.0.0.5"] {
            assert_eq!(g.of(ip(a)), Client::Loopback, "{a}");
        }
        assert_ne!(g.of(ip("192.0.2.1")), g.of(ip("192.0.2.2")));
        assert_eq!(g.of(ip("::ffff:192.0.2.1")), g.of(ip("192.0.2.1")));
        assert_eq!(g.of(ip("2001:db8::1")), g.of(ip("2001:db8::ffff:2")));
        assert_ne!(g.of(ip("2001:db8::1")), g.of(ip("2001:db8:0:1::1")));
        let wide = Grouping { v4_prefix: 24, v6_prefix: 48, ..Grouping::default() };
        assert_eq!(wide.of(ip("192.0.2.1")), wide.of(ip("192.0.2.200")));
        assert_ne!(wide.of(ip("192.0.2.1")), wide.of(ip("192.0.3.1")));
        assert_eq!(wide.of(ip("2001:db8::1")), wide.of(ip("2001:db8:0:7::1")));
        assert_eq!(Grouping { v4_prefix: 0, ..Grouping::default() }.of(ip("1.2.3.4")), Client::V4(0));
    }

    #[test]
    fn a_proxy_header_is_believed_only_from_a_trusted_proxy() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", "10.9.9.9, 198.51.100.7".parse().unwrap());
        let off = Grouping::default();
        assert_eq!(off.client(ip("127.0.0.1"), &h), Client::Loopback, "no header configured");
        let on = Grouping {
            header: Some("x-forwarded-for".into()),
            trusted: vec![ip("127.0.0.1"), ip("198.51.100.7")],
            ..Grouping::default()
        };
        // The proxy at 127.0.0.1 heard from 198.51.100.7, itself a trusted proxy, which heard
        // from 10.9.9.9.
        assert_eq!(on.client(ip("127.0.0.1"), &h), on.of(ip("10.9.9.9")));
        assert_eq!(on.client(ip("192.0.2.1"), &h), on.of(ip("192.0.2.1")), "not a trusted proxy");
        let mut bad = HeaderMap::new();
        bad.insert("x-forwarded-for", "not an address".parse().unwrap());
        assert_eq!(on.client(ip("127.0.0.1"), &bad), Client::Loopback);
        let mut ported = HeaderMap::new();
        ported.insert("x-forwarded-for", "[2001:db8::5]:4431".parse().unwrap());
        assert_eq!(on.client(ip("127.0.0.1"), &ported), on.of(ip("2001:db8::5")));
    }

    #[test]
    fn counts_hold_their_cap_and_come_back() {
        let c = Counts::default();
        assert!(c.take(Client::Loopback, 2) && c.take(Client::Loopback, 2));
        assert!(!c.take(Client::Loopback, 2));
        assert!(c.take(Client::V4(1), 2));
        c.give(Client::Loopback);
        assert!(c.take(Client::Loopback, 2));
        assert!(!c.take(Client::Loopback, 2));
    }
}
