"""Three ways to measure the distance between two points, so the demo servers disagree honestly.

The formulas trade accuracy for simplicity, and comparing them is the point of the demo:

- ``equirectangular``: pretend the map is flat. Good for short hops, wrong by percent over
  oceans, and worse near the poles.
- ``haversine``: a perfect sphere of the mean Earth radius. Within about 0.5 % everywhere.
- ``vincenty``: the WGS-84 ellipsoid that GPS uses. Within millimetres, but iterative, and it
  can fail to converge for nearly antipodal points (a known limit of Vincenty's method).

All angles are degrees in and out; distances are kilometres.
"""

from __future__ import annotations

import math

MEAN_RADIUS_KM = 6371.0088
"""IUGG mean Earth radius (2a + b) / 3, the usual choice for spherical formulas."""

WGS84_A_KM = 6378.137
WGS84_F = 1 / 298.257223563
WGS84_B_KM = WGS84_A_KM * (1 - WGS84_F)

KM_PER_UNIT = {"km": 1.0, "mi": 1.609344, "nmi": 1.852}
"""Kilometres in one of each unit a demo tool accepts (statute mile, nautical mile)."""


class NoConvergence(ArithmeticError):
    """Vincenty's iteration did not settle: the points are (nearly) antipodal."""


def _wrap180(degrees: float) -> float:
    """Bring a longitude difference into [-180, 180) so routes cross the date line correctly."""
    return (degrees + 180.0) % 360.0 - 180.0


def equirectangular(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Pythagoras on a flat map stretched by cos(mean latitude)."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    x = math.radians(_wrap180(lon2 - lon1)) * math.cos((phi1 + phi2) / 2)
    y = phi2 - phi1
    return MEAN_RADIUS_KM * math.hypot(x, y)


def haversine(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance on a sphere; the haversine form stays accurate for tiny distances."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi = phi2 - phi1
    dlam = math.radians(_wrap180(lon2 - lon1))
    h = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlam / 2) ** 2
    return 2 * MEAN_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def vincenty(
    lat1: float, lon1: float, lat2: float, lon2: float, *, tolerance: float = 1e-12,
    max_iterations: int = 200,
) -> tuple[float, float]:
    """Geodesic distance (km) and initial bearing (degrees from north) on the WGS-84 ellipsoid.

    Vincenty (1975), inverse problem. Raises NoConvergence when the longitude iteration does
    not settle, which happens only for nearly antipodal points.
    """
    a, b, f = WGS84_A_KM, WGS84_B_KM, WGS84_F
    big_l = math.radians(_wrap180(lon2 - lon1))
    u1 = math.atan((1 - f) * math.tan(math.radians(lat1)))
    u2 = math.atan((1 - f) * math.tan(math.radians(lat2)))
    sin_u1, cos_u1 = math.sin(u1), math.cos(u1)
    sin_u2, cos_u2 = math.sin(u2), math.cos(u2)

    lam = big_l
    for _ in range(max_iterations):
        sin_lam, cos_lam = math.sin(lam), math.cos(lam)
        sin_sigma = math.hypot(cos_u2 * sin_lam, cos_u1 * sin_u2 - sin_u1 * cos_u2 * cos_lam)
        if sin_sigma == 0.0:
            return 0.0, 0.0  # the same point
        cos_sigma = sin_u1 * sin_u2 + cos_u1 * cos_u2 * cos_lam
        sigma = math.atan2(sin_sigma, cos_sigma)
        sin_alpha = cos_u1 * cos_u2 * sin_lam / sin_sigma
        cos2_alpha = 1 - sin_alpha**2
        # On the equator cos2_alpha is 0 and the term below is undefined; its limit is 0.
        cos_2sm = cos_sigma - 2 * sin_u1 * sin_u2 / cos2_alpha if cos2_alpha != 0 else 0.0
        c = f / 16 * cos2_alpha * (4 + f * (4 - 3 * cos2_alpha))
        previous = lam
        lam = big_l + (1 - c) * f * sin_alpha * (
            sigma + c * sin_sigma * (cos_2sm + c * cos_sigma * (-1 + 2 * cos_2sm**2))
        )
        if abs(lam - previous) < tolerance:
            break
    else:
        raise NoConvergence(f"Vincenty's method did not converge in {max_iterations} iterations")

    u_sq = cos2_alpha * (a**2 - b**2) / b**2
    big_a = 1 + u_sq / 16384 * (4096 + u_sq * (-768 + u_sq * (320 - 175 * u_sq)))
    big_b = u_sq / 1024 * (256 + u_sq * (-128 + u_sq * (74 - 47 * u_sq)))
    delta_sigma = big_b * sin_sigma * (
        cos_2sm
        + big_b / 4 * (
            cos_sigma * (-1 + 2 * cos_2sm**2)
            - big_b / 6 * cos_2sm * (-3 + 4 * sin_sigma**2) * (-3 + 4 * cos_2sm**2)
        )
    )
    distance = b * big_a * (sigma - delta_sigma)
    bearing = math.degrees(
        math.atan2(cos_u2 * math.sin(lam), cos_u1 * sin_u2 - sin_u1 * cos_u2 * math.cos(lam))
    )
    return distance, bearing % 360.0


def great_circle_points(
    lat1: float, lon1: float, lat2: float, lon2: float, steps: int
) -> list[tuple[float, float]]:
    """Points along the spherical great circle (for drawing a route on a map)."""
    def vec(lat: float, lon: float) -> tuple[float, float, float]:
        phi, lam = math.radians(lat), math.radians(lon)
        return (math.cos(phi) * math.cos(lam), math.cos(phi) * math.sin(lam), math.sin(phi))

    p, q = vec(lat1, lon1), vec(lat2, lon2)
    omega = math.acos(max(-1.0, min(1.0, sum(x * y for x, y in zip(p, q, strict=True)))))
    if omega < 1e-12 or abs(omega - math.pi) < 1e-9:  # same point, or no unique great circle
        return [(lat1, lon1), (lat2, lon2)]
    points = []
    for i in range(steps + 1):
        t = i / steps
        s1 = math.sin((1 - t) * omega) / math.sin(omega)
        s2 = math.sin(t * omega) / math.sin(omega)
        x, y, z = (s1 * u + s2 * v for u, v in zip(p, q, strict=True))
        lat = math.degrees(math.atan2(z, math.hypot(x, y)))
        points.append((lat, math.degrees(math.atan2(y, x))))
    return points
